"""Scheduler curves match torch.optim.lr_scheduler step for step."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import numdiff
from numdiff import optim
from numdiff.optim import lr_scheduler

torch = pytest.importorskip("torch")

SCHEDULERS = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("MultiStepLR", {"milestones": [2, 5, 5, 9], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 5}),
    ("CosineAnnealingLR", {"T_max": 4, "eta_min": 0.01}),
    ("OneCycleLR", {"max_lr": [0.5, 1.0], "total_steps": 20}),
    ("OneCycleLR", {"max_lr": 0.5, "epochs": 4, "steps_per_epoch": 5, "anneal_strategy": "linear"}),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": 20, "three_phase": True, "pct_start": 0.25}),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": 20, "cycle_momentum": False}),
]


def _groups(make_param):
    return [{"params": [make_param()]}, {"params": [make_param()], "lr": 0.05}]


def _curves(optimizer_name: str, opt_kwargs: dict, name: str, kwargs: dict, steps: int):
    nd_opt = getattr(optim, optimizer_name)(
        _groups(lambda: numdiff.zeros(1, requires_grad=True)), **opt_kwargs
    )
    th_opt = getattr(torch.optim, optimizer_name)(
        _groups(lambda: torch.zeros(1, requires_grad=True)), **opt_kwargs
    )
    nd_sched = getattr(lr_scheduler, name)(nd_opt, **kwargs)
    th_sched = getattr(torch.optim.lr_scheduler, name)(th_opt, **kwargs)
    rows = []
    for _ in range(steps):
        nd_opt.step()
        th_opt.step()
        nd_sched.step()
        th_sched.step()
        momentum_key = "betas" if "betas" in th_opt.defaults else "momentum"
        rows.append(
            (
                nd_sched.get_last_lr(),
                th_sched.get_last_lr(),
                [g[momentum_key] for g in nd_opt.param_groups],
                [g[momentum_key] for g in th_opt.param_groups],
            )
        )
    return rows


@pytest.mark.parametrize("optimizer", [("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.1})])
@pytest.mark.parametrize(("name", "kwargs"), SCHEDULERS, ids=lambda v: v if isinstance(v, str) else "")
def test_learning_rate_curve_matches_torch(optimizer, name, kwargs):
    steps = 20 if name == "OneCycleLR" else 14
    for nd_lr, th_lr, nd_mom, th_mom in _curves(*optimizer, name, kwargs, steps):
        np.testing.assert_allclose(nd_lr, th_lr, rtol=1e-12, atol=0)
        np.testing.assert_allclose(np.ravel(nd_mom), np.ravel(th_mom), rtol=1e-12, atol=0)


@pytest.mark.parametrize(("name", "kwargs"), SCHEDULERS[:5], ids=lambda v: v if isinstance(v, str) else "")
def test_step_with_epoch_uses_the_closed_form_like_torch(name, kwargs):
    nd_opt = optim.SGD([numdiff.zeros(1, requires_grad=True)], lr=0.1)
    th_opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    nd_sched = getattr(lr_scheduler, name)(nd_opt, **kwargs)
    th_sched = getattr(torch.optim.lr_scheduler, name)(th_opt, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in (3, 7, 4, 10):
            nd_opt.step()
            th_opt.step()
            nd_sched.step(epoch)
            th_sched.step(epoch)
            np.testing.assert_allclose(nd_sched.get_last_lr(), th_sched.get_last_lr(), rtol=1e-12)


def test_scheduler_sets_initial_lr_and_first_lr_is_the_base_lr():
    opt = optim.SGD([numdiff.zeros(1, requires_grad=True)], lr=0.3)
    sched = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    assert opt.param_groups[0]["initial_lr"] == 0.3
    assert sched.get_last_lr() == [0.3]
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [0.15] and opt.param_groups[0]["lr"] == 0.15


def test_stepping_the_scheduler_before_the_optimizer_warns():
    opt = optim.SGD([numdiff.zeros(1, requires_grad=True)], lr=0.3)
    sched = lr_scheduler.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt2 = optim.SGD([numdiff.zeros(1, requires_grad=True)], lr=0.3)
    sched2 = lr_scheduler.StepLR(opt2, step_size=2)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched2.step()


def test_resuming_needs_initial_lr_in_the_groups():
    opt = optim.SGD([numdiff.zeros(1, requires_grad=True)], lr=0.3)
    with pytest.raises(KeyError, match=r"initial_lr' is not specified in param_groups\[0\]"):
        lr_scheduler.StepLR(opt, step_size=2, last_epoch=4)


def test_scheduler_state_dict_round_trip_continues_the_curve():
    def make():
        opt = optim.SGD([numdiff.zeros(1, requires_grad=True)], lr=1.0)
        return opt, lr_scheduler.MultiStepLR(opt, milestones=[2, 4], gamma=0.5)

    opt, sched = make()
    for _ in range(3):
        opt.step()
        sched.step()
    opt2, sched2 = make()
    sched2.load_state_dict({**sched.state_dict(), "milestones": dict(sched.state_dict()["milestones"])})
    opt2.load_state_dict(opt.state_dict())
    for _ in range(3):
        for o, s in ((opt, sched), (opt2, sched2)):
            o.step()
            s.step()
        assert sched.get_last_lr() == sched2.get_last_lr()
    assert sched2.get_last_lr() == [0.25]


def test_one_cycle_validates_its_arguments():
    opt = optim.SGD([numdiff.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="Expected positive integer total_steps, but got 0"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=0)
    with pytest.raises(ValueError, match="either total_steps OR"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, epochs=3)
    with pytest.raises(ValueError, match="pct_start, but got 2"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=5, pct_start=2)
    with pytest.raises(ValueError, match="instead got square"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=5, anneal_strategy="square")
    with pytest.raises(ValueError, match="expected 1 values for max_lr, got 2"):
        lr_scheduler.OneCycleLR(opt, max_lr=[1.0, 2.0], total_steps=5)
    no_momentum = optim.Adagrad([numdiff.zeros(1, requires_grad=True)])
    with pytest.raises(ValueError, match="must support momentum or beta1"):
        lr_scheduler.OneCycleLR(no_momentum, max_lr=1.0, total_steps=5)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    opt.step()
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="Tried to step 3 times. The specified number of total steps is 2"):
        sched.step()


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [("MultiStepLR", {"milestones": [2, 2, 4]}), ("OneCycleLR", {"max_lr": 1.0, "total_steps": 10})],
)
def test_scheduler_state_survives_numdiff_save_and_load(tmp_path, name, kwargs):
    def make():
        opt = optim.SGD([numdiff.zeros(1, requires_grad=True)], lr=1.0, momentum=0.9)
        return opt, getattr(lr_scheduler, name)(opt, **kwargs)

    opt, sched = make()
    for _ in range(3):
        opt.step()
        sched.step()
    numdiff.save({"opt": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "s.ckpt")
    ckpt = numdiff.load(tmp_path / "s.ckpt")
    opt2, sched2 = make()
    opt2.load_state_dict(ckpt["opt"])
    sched2.load_state_dict(ckpt["sched"])
    for _ in range(4):
        for o, s in ((opt, sched), (opt2, sched2)):
            o.step()
            s.step()
        assert sched2.get_last_lr() == sched.get_last_lr()
        assert opt2.param_groups[0]["momentum"] == opt.param_groups[0]["momentum"]
