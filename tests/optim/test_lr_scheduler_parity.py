"""MultiplicativeLR, ConstantLR, PolynomialLR, ChainedScheduler, CyclicLR and
CosineAnnealingWarmRestarts follow torch.optim.lr_scheduler step for step: learning rates (and
cycled momentum), get_last_lr, closed-form jumps, and state_dict round trips."""

from __future__ import annotations

import warnings

import pytest
import torch

import numdiff
from numdiff.optim import lr_scheduler

STEPS = 35


class Decay:
    """A callable object: its attributes travel in the scheduler's state dict."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, epoch):
        return self.rate if epoch % 4 else 1.02


def _optimizers(lib, kind):
    params = [{"params": [lib.zeros(1, requires_grad=True)], "lr": lr} for lr in (0.5, 0.1)]
    if kind.endswith("adam"):
        return lib.optim.Adam(params, lr=1.0)
    return lib.optim.SGD(params, lr=1.0, momentum=0.9)


def _schedule(lib, opt, kind):
    sched = lib.optim.lr_scheduler
    if kind == "multiplicative":
        return sched.MultiplicativeLR(opt, lambda epoch: 0.9 if epoch % 3 else 1.05)
    if kind == "multiplicative_object":
        return sched.MultiplicativeLR(opt, [Decay(0.9), Decay(0.8)])
    if kind == "constant":
        return sched.ConstantLR(opt, factor=0.3, total_iters=4)
    if kind == "polynomial":
        return sched.PolynomialLR(opt, total_iters=20)
    if kind == "polynomial_squared":
        return sched.PolynomialLR(opt, total_iters=12, power=2.0)
    if kind == "chained":
        parts = [sched.ConstantLR(opt, factor=0.1, total_iters=3), sched.ExponentialLR(opt, gamma=0.9)]
        return sched.ChainedScheduler(parts)
    if kind == "chained_cosine":
        parts = [sched.CosineAnnealingLR(opt, T_max=7), sched.PolynomialLR(opt, total_iters=30, power=0.5)]
        return sched.ChainedScheduler(parts, optimizer=opt)
    if kind in ("triangular", "triangular2", "triangular2_adam"):
        mode = kind.split("_")[0]
        return sched.CyclicLR(opt, base_lr=0.01, max_lr=[0.2, 0.1], step_size_up=4, step_size_down=3, mode=mode)
    if kind == "exp_range":
        return sched.CyclicLR(opt, 0.01, 0.3, step_size_up=5, mode="exp_range", gamma=0.95)
    if kind == "custom_scale_iterations":
        return sched.CyclicLR(opt, 0.01, 0.3, step_size_up=3, scale_fn=lambda x: 1 / (1 + x), scale_mode="iterations")
    if kind == "cyclic_no_momentum":
        return sched.CyclicLR(opt, 0.05, 0.5, step_size_up=6, cycle_momentum=False)
    if kind == "warm_restarts":
        return sched.CosineAnnealingWarmRestarts(opt, T_0=6)
    if kind == "warm_restarts_growing":
        return sched.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.001)
    raise AssertionError(kind)


KINDS = [
    "multiplicative", "multiplicative_object", "constant", "polynomial", "polynomial_squared", "chained",
    "chained_cosine", "triangular", "triangular2", "triangular2_adam", "exp_range", "custom_scale_iterations",
    "cyclic_no_momentum", "warm_restarts", "warm_restarts_growing",
]


def _group_values(opt):
    return [(g["lr"], g.get("momentum"), tuple(g["betas"]) if "betas" in g else None) for g in opt.param_groups]


def _pair(kind):
    ours, theirs = _optimizers(numdiff, kind), _optimizers(torch, kind)
    return ours, theirs, _schedule(numdiff, ours, kind), _schedule(torch, theirs, kind)


@pytest.mark.parametrize("kind", KINDS)
def test_learning_rates_match_torch_exactly_each_step(kind):
    ours, theirs, our_sched, their_sched = _pair(kind)
    assert our_sched.get_last_lr() == their_sched.get_last_lr()
    assert _group_values(ours) == _group_values(theirs)
    for _ in range(STEPS):
        ours.step()
        theirs.step()
        our_sched.step()
        their_sched.step()
        assert our_sched.get_last_lr() == their_sched.get_last_lr()
        assert _group_values(ours) == _group_values(theirs)


@pytest.mark.parametrize("kind", KINDS)
def test_state_dict_round_trip_resumes_the_schedule(kind):
    ours, theirs, our_sched, their_sched = _pair(kind)
    for _ in range(11):
        ours.step()
        theirs.step()
        our_sched.step()
        their_sched.step()
    saved_sched, saved_opt = our_sched.state_dict(), ours.state_dict()
    for value in saved_sched.values():
        assert not callable(value), "a state dict must hold no functions (it is pickled with the checkpoint)"
    resumed_opt = _optimizers(numdiff, kind)
    resumed = _schedule(numdiff, resumed_opt, kind)
    resumed_opt.load_state_dict(saved_opt)
    resumed.load_state_dict(saved_sched)
    assert resumed.get_last_lr() == their_sched.get_last_lr()
    for _ in range(STEPS - 11):
        resumed_opt.step()
        theirs.step()
        resumed.step()
        their_sched.step()
        assert resumed.get_last_lr() == their_sched.get_last_lr()
        assert _group_values(resumed_opt) == _group_values(theirs)


def test_callable_object_attributes_travel_in_the_state_dict():
    opt = _optimizers(numdiff, "sgd")
    sched = lr_scheduler.MultiplicativeLR(opt, [Decay(0.9), Decay(0.8)])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"rate": 0.9}, {"rate": 0.8}]
    other = lr_scheduler.MultiplicativeLR(_optimizers(numdiff, "sgd"), [Decay(0.5), Decay(0.5)])
    other.load_state_dict(state)
    assert [fn.rate for fn in other.lr_lambdas] == [0.9, 0.8]


@pytest.mark.parametrize("t_mult", [1, 2, 3])
def test_warm_restarts_with_fractional_epochs_match_torch(t_mult):
    ours, theirs = _optimizers(numdiff, "sgd"), _optimizers(torch, "sgd")
    our_sched = lr_scheduler.CosineAnnealingWarmRestarts(ours, T_0=4, T_mult=t_mult, eta_min=0.01)
    their_sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(theirs, T_0=4, T_mult=t_mult, eta_min=0.01)
    iters = 5
    for epoch in range(12):
        for i in range(iters):
            ours.step()
            theirs.step()
            our_sched.step(epoch + i / iters)
            their_sched.step(epoch + i / iters)
            assert our_sched.get_last_lr() == their_sched.get_last_lr()
            assert (our_sched.T_cur, our_sched.T_i, our_sched.last_epoch) == (
                their_sched.T_cur, their_sched.T_i, their_sched.last_epoch
            )


@pytest.mark.parametrize("kind", ["constant", "polynomial", "polynomial_squared"])
def test_step_with_an_epoch_uses_torchs_closed_form(kind):
    ours, theirs, our_sched, their_sched = _pair(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in [3, 0, 7, 25, 4, 12]:
            our_sched.step(epoch)
            their_sched.step(epoch)
            assert our_sched.get_last_lr() == their_sched.get_last_lr()


def test_lr_scheduler_module_has_every_torch_scheduler():
    theirs = {name for name in dir(torch.optim.lr_scheduler) if isinstance(getattr(torch.optim.lr_scheduler, name), type)}
    theirs = {name for name in theirs if issubclass(getattr(torch.optim.lr_scheduler, name), torch.optim.lr_scheduler.LRScheduler)}
    missing = sorted(name for name in theirs if not hasattr(lr_scheduler, name))  # _LRScheduler is private: not in dir()
    assert not missing, missing


def test_bad_arguments_raise_errors_naming_the_scheduler_and_values():
    opt = _optimizers(numdiff, "sgd")
    sched = lr_scheduler
    with pytest.raises(ValueError, match=r"ConstantLR: .*between 0 and 1, got 1.5"):
        sched.ConstantLR(opt, factor=1.5)
    with pytest.raises(ValueError, match=r"MultiplicativeLR: expected 2 lr_lambdas \(one per group\), got 1"):
        sched.MultiplicativeLR(opt, [lambda e: 1.0])
    with pytest.raises(TypeError, match=r"MultiplicativeLR: lr_lambda\[0\] should be a function, got float"):
        sched.MultiplicativeLR(opt, 0.9)
    with pytest.raises(ValueError, match=r"CyclicLR: mode must be one of .*got 'sawtooth'"):
        sched.CyclicLR(opt, 0.1, 1.0, mode="sawtooth")
    with pytest.raises(ValueError, match=r"expected 2 values for max_lr, got 3"):
        sched.CyclicLR(opt, 0.1, [1.0, 1.0, 1.0])
    adagrad = numdiff.optim.Adagrad([numdiff.zeros(1, requires_grad=True)])
    with pytest.raises(ValueError, match=r"CyclicLR: optimizer must support momentum or beta1"):
        sched.CyclicLR(adagrad, 0.1, 1.0)
    with pytest.raises(ValueError, match=r"CosineAnnealingWarmRestarts: expected a positive integer T_0, got 0"):
        sched.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match=r"CosineAnnealingWarmRestarts: expected an integer T_mult >= 1, got 1.5"):
        sched.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=1.5)
    with pytest.raises(ValueError, match=r"CosineAnnealingWarmRestarts.step: expected a non-negative epoch, got -1"):
        sched.CosineAnnealingWarmRestarts(opt, T_0=3).step(-1)
    with pytest.raises(ValueError, match=r"ChainedScheduler expects at least one scheduler"):
        sched.ChainedScheduler([])
    plateau = sched.ReduceLROnPlateau(opt)
    with pytest.raises(ValueError, match=r"does not support `ReduceLROnPlateau`.*index 1"):
        sched.ChainedScheduler([sched.ConstantLR(opt), plateau])
    other = _optimizers(numdiff, "sgd")
    with pytest.raises(ValueError, match=r"same optimizer.*ExponentialLR at index 1"):
        sched.ChainedScheduler([sched.ConstantLR(opt), sched.ExponentialLR(other, 0.9)])
