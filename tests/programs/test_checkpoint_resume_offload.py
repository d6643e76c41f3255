"""A digits MLP trained with its saved activations offloaded (save_on_cpu, and pack hooks that write
them to disk with torch.save), checkpointed mid-run as PyTorch's recipes do (model, optimizer and
epoch in one file; two models in one file), resumed from a memory-mapped load, and warm-started
into a wider network with strict=False. Written as a PyTorch program and run on numdiff. Stands
for the tutorials' saved-tensors-hooks tutorial and the saving/loading recipes (general
checkpoint, multiple models, warmstarting, load_state_dict tips).

The offloaded run must reproduce the plain run's losses, and the resumed run the uninterrupted one.
"""

from __future__ import annotations

import os
import tempfile
import uuid

import numpy as np
import pytest

import numdiff as torch
import numdiff.nn as nn
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling

datasets = pytest.importorskip("sklearn.datasets")


def make_model(hidden=32):
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(64, hidden), nn.Tanh(), nn.Linear(hidden, 10))


def batches():
    data = datasets.load_digits()
    x = torch.tensor((data.data / 16.0).astype(np.float32))
    y = torch.tensor(data.target.astype(np.int64))
    return [(x[i:i + 100], y[i:i + 100]) for i in range(0, 1000, 100)]


def step(model, opt, x, y, hooks=None):
    if hooks is None:
        loss = F.cross_entropy(model(x), y)
    else:
        with hooks:
            loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss)


class DiskHooks(torch.autograd.graph.saved_tensors_hooks):
    def __init__(self, folder):
        self.files = []

        def pack(tensor):
            name = os.path.join(folder, str(uuid.uuid4()))
            torch.save(tensor, name)
            self.files.append(name)
            return name

        super().__init__(pack, lambda name: torch.load(name))


def test_offloaded_activations_give_the_same_training():
    data = batches()
    plain, cpu, disk = make_model(), make_model(), make_model()
    opts = [torch.optim.SGD(m.parameters(), lr=0.5, momentum=0.9) for m in (plain, cpu, disk)]
    with tempfile.TemporaryDirectory() as folder:
        hooks = DiskHooks(folder)
        for x, y in data:
            losses = [
                step(plain, opts[0], x, y),
                step(cpu, opts[1], x, y, torch.autograd.graph.save_on_cpu()),
                step(disk, opts[2], x, y, hooks),
            ]
            assert losses[0] == losses[1] == losses[2]
        assert len(hooks.files) >= 3 * len(data)
    assert losses[0] < 1.0


def test_resume_from_a_general_checkpoint_and_warm_start(tmp_path):
    data = batches()
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for x, y in data[:5]:
        step(model, opt, x, y)
    path = tmp_path / "ckpt.tar"
    torch.save({"epoch": 5, "model_state_dict": model.state_dict(), "optimizer_state_dict": opt.state_dict()}, path)
    straight = [step(model, opt, x, y) for x, y in data[5:]]

    resumed = make_model()
    resumed_opt = torch.optim.Adam(resumed.parameters(), lr=0.01)
    checkpoint = torch.load(path, mmap=True)
    resumed.load_state_dict(checkpoint["model_state_dict"])
    resumed_opt.load_state_dict(checkpoint["optimizer_state_dict"])
    assert checkpoint["epoch"] == 5
    again = [step(resumed, resumed_opt, x, y) for x, y in data[5:]]
    np.testing.assert_allclose(again, straight, rtol=1e-6)

    torch.save({"modelA": model.state_dict(), "modelB": resumed.state_dict()}, tmp_path / "both.pt")
    both = torch.load(tmp_path / "both.pt")
    wide = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 10), nn.LogSoftmax(dim=1))
    result = wide.load_state_dict(both["modelA"], strict=False)
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(wide[0].weight.detach().numpy(), model[0].weight.detach().numpy())
