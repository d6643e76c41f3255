"""LambdaLR, LinearLR, SequentialLR and ReduceLROnPlateau follow torch.optim.lr_scheduler epoch by epoch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import numdiff
from numdiff.optim import lr_scheduler


def _optimizers(lrs=(0.5, 0.1)):
    ours = numdiff.optim.SGD([{"params": [numdiff.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs], lr=1.0)
    theirs = torch.optim.SGD([{"params": [torch.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs], lr=1.0)
    return ours, theirs


def _schedule(lib, opt, kind):
    sched = lib.optim.lr_scheduler
    if kind == "lambda":
        return sched.LambdaLR(opt, lambda epoch: 0.9**epoch + 0.1 * (epoch % 3))
    if kind == "lambda_per_group":
        return sched.LambdaLR(opt, [lambda e: 1.0 / (e + 1), lambda e: 0.5 ** (e // 2)])
    if kind == "linear_warmup":
        return sched.LinearLR(opt, start_factor=0.1, total_iters=4)
    if kind == "linear_decay":
        return sched.LinearLR(opt, start_factor=1.0, end_factor=0.2, total_iters=6)
    if kind == "sequential":
        warmup = sched.LinearLR(opt, start_factor=0.25, total_iters=3)
        decay = sched.CosineAnnealingLR(opt, T_max=5)
        return sched.SequentialLR(opt, [warmup, decay], milestones=[3])
    if kind == "sequential_three":
        parts = [sched.ExponentialLR(opt, 0.5), sched.StepLR(opt, 2, 0.3), sched.LinearLR(opt, 0.5, total_iters=2)]
        return sched.SequentialLR(opt, parts, milestones=[2, 6])
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind", ["lambda", "lambda_per_group", "linear_warmup", "linear_decay", "sequential", "sequential_three"]
)
def test_learning_rates_match_torch_each_epoch(kind):
    ours, theirs = _optimizers()
    our_sched, their_sched = _schedule(numdiff, ours, kind), _schedule(torch, theirs, kind)
    assert our_sched.get_last_lr() == pytest.approx(their_sched.get_last_lr(), rel=1e-14)
    for _ in range(12):
        ours.step()
        theirs.step()
        our_sched.step()
        their_sched.step()
        assert our_sched.get_last_lr() == pytest.approx(their_sched.get_last_lr(), rel=1e-14)
        assert [g["lr"] for g in ours.param_groups] == pytest.approx([g["lr"] for g in theirs.param_groups], rel=1e-14)


@pytest.mark.parametrize("kind", ["lambda", "linear_warmup", "sequential"])
def test_state_dict_round_trip_resumes_the_schedule(kind):
    ours, _ = _optimizers()
    sched = _schedule(numdiff, ours, kind)
    for _ in range(4):
        ours.step()
        sched.step()
    saved = sched.state_dict()
    expected = []
    for _ in range(3):
        sched.step()
        expected.append(sched.get_last_lr())
    fresh_opt, _ = _optimizers()
    fresh_opt.load_state_dict(ours.state_dict())
    fresh = _schedule(numdiff, fresh_opt, kind)
    fresh.load_state_dict(saved)
    for group, lr in zip(fresh_opt.param_groups, saved["_last_lr"]):
        group["lr"] = lr
    got = []
    for _ in range(3):
        fresh.step()
        got.append(fresh.get_last_lr())
    assert np.allclose(got, expected, rtol=1e-14)


def test_lambda_state_dict_keeps_callable_objects_state_like_torch():
    class Warmup:
        def __init__(self):
            self.factor = 2.0

        def __call__(self, epoch):
            return self.factor * epoch

    ours, theirs = _optimizers()
    our_state = lr_scheduler.LambdaLR(ours, Warmup()).state_dict()
    their_state = torch.optim.lr_scheduler.LambdaLR(theirs, Warmup()).state_dict()
    assert our_state["lr_lambdas"] == their_state["lr_lambdas"] == [{"factor": 2.0}, {"factor": 2.0}]
    assert lr_scheduler.LambdaLR(ours, lambda e: 1.0).state_dict()["lr_lambdas"] == [None, None]


METRICS = [1.0, 0.9, 0.95, 0.95, 0.91, 0.97, 0.99, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"patience": 1},
        {"mode": "max", "factor": 0.5, "patience": 0},
        {"patience": 1, "threshold": 0.1, "threshold_mode": "abs", "cooldown": 2},
        {"patience": 0, "factor": 0.2, "min_lr": [0.05, 0.001]},
        {"patience": 0, "factor": 0.5, "min_lr": 0.3, "eps": 0.01},
    ],
)
def test_reduce_on_plateau_matches_torch(kwargs):
    ours, theirs = _optimizers()
    our_sched = lr_scheduler.ReduceLROnPlateau(ours, **kwargs)
    their_sched = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs, **kwargs)
    for metric in METRICS:
        our_sched.step(numdiff.tensor(metric))
        their_sched.step(torch.tensor(metric))
        assert our_sched.get_last_lr() == pytest.approx(their_sched.get_last_lr(), rel=1e-14)
        assert (our_sched.best, our_sched.num_bad_epochs) == (their_sched.best, their_sched.num_bad_epochs)
    assert set(our_sched.state_dict()) == set(their_sched.state_dict())


def test_reduce_on_plateau_state_dict_round_trip():
    ours, _ = _optimizers()
    sched = lr_scheduler.ReduceLROnPlateau(ours, patience=1)
    for metric in METRICS[:5]:
        sched.step(metric)
    fresh = lr_scheduler.ReduceLROnPlateau(ours)
    fresh.load_state_dict(sched.state_dict())
    assert (fresh.best, fresh.num_bad_epochs, fresh.patience) == (sched.best, sched.num_bad_epochs, 1)


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda o: lr_scheduler.LinearLR(o, start_factor=0.0), "Starting multiplicative factor"),
        (lambda o: lr_scheduler.LinearLR(o, end_factor=1.5), "Ending multiplicative factor"),
        (lambda o: lr_scheduler.LambdaLR(o, [lambda e: 1.0]), "Expected 2 lr_lambdas, but got 1"),
        (lambda o: lr_scheduler.ReduceLROnPlateau(o, factor=1.0), "Factor should be < 1.0"),
        (lambda o: lr_scheduler.ReduceLROnPlateau(o, mode="lowest"), "mode lowest is unknown"),
        (lambda o: lr_scheduler.ReduceLROnPlateau(o, threshold_mode="pct"), "threshold mode pct is unknown"),
        (lambda o: lr_scheduler.ReduceLROnPlateau(o, min_lr=[0.1]), "expected 2 min_lrs"),
        (lambda o: lr_scheduler.SequentialLR(o, [lr_scheduler.StepLR(o, 2)], milestones=[3]), "one more than"),
    ],
)
def test_bad_arguments(make, message):
    ours, _ = _optimizers()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=message):
            make(ours)


def test_lambda_must_be_callable_and_sequential_schedulers_share_the_optimizer():
    ours, _ = _optimizers()
    other, _ = _optimizers()
    with pytest.raises(TypeError, match="lr_lambda must be callable"):
        lr_scheduler.LambdaLR(ours, 0.5)
    with pytest.raises(ValueError, match="same optimizer"):
        lr_scheduler.SequentialLR(ours, [lr_scheduler.StepLR(ours, 2), lr_scheduler.StepLR(other, 2)], milestones=[2])
