"""A few training steps of a small model, numdiff vs torch 2.13 from the same weights and data."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
import numdiff.optim as optim
from tests.nn.helpers import assert_close, copy_state

torch = pytest.importorskip("torch")


def _build(lib):
    return lib.Sequential(
        lib.Conv2d(1, 2, 3, padding=1), lib.BatchNorm2d(2), lib.ReLU(), lib.AvgPool2d(2),
        lib.Flatten(), lib.Dropout(0.0), lib.Linear(8, 3),
    )


def test_sgd_steps_with_clipping_track_torch(rng):
    ours, theirs = _build(nn).double(), _build(torch.nn).double()
    copy_state(ours, theirs)
    ours_opt = optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    theirs_opt = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    x = rng.standard_normal((6, 1, 4, 4))
    y = rng.integers(0, 3, 6)
    for _ in range(4):
        ours_opt.zero_grad()
        theirs_opt.zero_grad()
        loss = nn.functional.cross_entropy(ours(numdiff.tensor(x)), numdiff.tensor(y), label_smoothing=0.1)
        expected = torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y), label_smoothing=0.1)
        assert_close(loss, expected, rtol=1e-9)
        loss.backward()
        expected.backward()
        norm = nn.utils.clip_grad_norm_(ours.parameters(), 0.5)
        assert_close(norm, torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.5), rtol=1e-9)
        ours_opt.step()
        theirs_opt.step()
    theirs_state = theirs.state_dict()
    for name, value in ours.state_dict().items():
        assert_close(value, theirs_state[name], rtol=1e-8, atol=1e-10, what=name)
    assert all(p.is_leaf and p.requires_grad for p in ours.parameters())


def test_eval_mode_checkpoint_round_trip_reproduces_predictions(tmp_path, rng):
    model = _build(nn)
    model.train()
    model(numdiff.tensor(rng.standard_normal((4, 1, 4, 4)), dtype=numdiff.float32))  # move running stats
    model.eval()
    x = numdiff.tensor(rng.standard_normal((2, 1, 4, 4)), dtype=numdiff.float32)
    numdiff.save(model.state_dict(), tmp_path / "model.npz")
    restored = _build(nn).eval()
    restored.load_state_dict(numdiff.load(tmp_path / "model.npz"))
    np.testing.assert_array_equal(restored(x).detach().numpy(), model(x).detach().numpy())
