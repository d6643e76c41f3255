"""numdiff.optim.swa_utils against torch.optim.swa_utils: the averaged weights (SWA and EMA), the
SWALR schedule, and update_bn's recomputed statistics."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
import numdiff.nn as nn
from numdiff.optim import swa_utils


def _models():
    ours = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    with torch.no_grad():
        for mine, their in zip(ours.parameters(), theirs.parameters()):
            their.copy_(torch.tensor(mine.detach().numpy()))
    return ours, theirs


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema", "buffers"])
def test_averaged_model_matches_torch(kind):
    ours, theirs = _models()
    options = {
        "swa": ({}, {}),
        "ema_multi": ({"multi_avg_fn": swa_utils.get_ema_multi_avg_fn(0.9)}, {"multi_avg_fn": torch.optim.swa_utils.get_ema_multi_avg_fn(0.9)}),
        "ema": ({"avg_fn": swa_utils.get_ema_avg_fn(0.8)}, {"avg_fn": torch.optim.swa_utils.get_ema_avg_fn(0.8)}),
        "buffers": ({"use_buffers": True}, {"use_buffers": True}),
    }[kind]
    my_avg, their_avg = swa_utils.AveragedModel(ours, **options[0]), torch.optim.swa_utils.AveragedModel(theirs, **options[1])
    rng = np.random.default_rng(0)
    for _ in range(4):
        with numdiff.no_grad(), torch.no_grad():
            for mine, their in zip(ours.parameters(), theirs.parameters()):
                step = rng.standard_normal(tuple(mine.shape)).astype(np.float32)
                mine.add_(numdiff.tensor(step))
                their.add_(torch.tensor(step))
        x = rng.standard_normal((5, 3)).astype(np.float32)
        ours(numdiff.tensor(x))
        theirs(torch.tensor(x))
        my_avg.update_parameters(ours)
        their_avg.update_parameters(theirs)
    for mine, their in zip(my_avg.module.state_dict().values(), their_avg.module.state_dict().values()):
        np.testing.assert_allclose(mine.numpy(), their.numpy(), rtol=1e-5, atol=1e-6)
    assert my_avg.n_averaged.item() == their_avg.n_averaged.item() == 4


@pytest.mark.parametrize("strategy, epochs", [("cos", 3), ("linear", 2), ("cos", 0)])
def test_swalr_schedule_matches_torch(strategy, epochs):
    ours, theirs = _models()
    my_opt = numdiff.optim.SGD(ours.parameters(), lr=0.5)
    their_opt = torch.optim.SGD(theirs.parameters(), lr=0.5)
    mine = swa_utils.SWALR(my_opt, swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy)
    their = torch.optim.swa_utils.SWALR(their_opt, swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy)
    for _ in range(6):
        my_opt.step()
        their_opt.step()
        mine.step()
        their.step()
        assert mine.get_last_lr() == pytest.approx(their.get_last_lr(), rel=1e-12)
    with pytest.raises(ValueError, match="SWALR: anneal_strategy"):
        swa_utils.SWALR(my_opt, 0.1, anneal_strategy="step")


def test_update_bn_matches_torch():
    ours, theirs = _models()
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((6, 3)).astype(np.float32) for _ in range(3)]
    swa_utils.update_bn([(numdiff.tensor(b), 0) for b in batches], ours)
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], theirs)
    np.testing.assert_allclose(ours[1].running_mean.numpy(), theirs[1].running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[1].running_var.numpy(), theirs[1].running_var.numpy(), rtol=1e-5, atol=1e-6)
    assert ours[1].momentum == 0.1
