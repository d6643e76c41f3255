"""Adadelta, Adamax, NAdam and RAdam match torch.optim step for step, in float64 and float32."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff import optim

SHAPES = [(3, 4), (5,), ()]

CASES = [
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-5, "weight_decay": 0.1, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.01, "betas": (0.5, 0.9), "weight_decay": 0.1}),  # rectified from step 6
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
]


def _case_id(case: tuple[str, dict]) -> str:
    return case[0] + "".join(f"-{k}={v}" for k, v in case[1].items())


def _run_both(name: str, kwargs: dict, dtype: type, steps: int):
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    ours = [numdiff.tensor(a.copy(), requires_grad=True) for a in init]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    our_opt = getattr(optim, name)(ours, **kwargs)
    their_opt = getattr(torch.optim, name)(theirs, foreach=False, **kwargs)
    for _ in range(steps):
        for p, q in zip(ours, theirs):
            g = rng.standard_normal(p.shape).astype(dtype)
            p.grad, q.grad = numdiff.tensor(g), torch.tensor(g)
        our_opt.step()
        their_opt.step()
        yield ours, theirs, our_opt, their_opt


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_matches_torch_every_step_in_float64(case):
    for ours, theirs, _, _ in _run_both(*case, np.float64, steps=10):
        for p, q in zip(ours, theirs):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("case", CASES[::3], ids=_case_id)
def test_matches_torch_in_float32(case):
    for ours, theirs, _, _ in _run_both(*case, np.float32, steps=4):
        for p, q in zip(ours, theirs):
            assert p.dtype is numdiff.float32
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", CASES[::2], ids=_case_id)
def test_state_dict_has_torchs_keys_and_round_trips(case):
    name, kwargs = case
    *_, (ours, theirs, our_opt, their_opt) = _run_both(name, kwargs, np.float64, steps=3)
    saved = our_opt.state_dict()
    assert sorted(saved["state"][0]) == sorted(their_opt.state_dict()["state"][0])
    assert saved["param_groups"][0].keys() - {"params"} <= their_opt.state_dict()["param_groups"][0].keys()
    for key, value in saved["state"][0].items():
        np.testing.assert_allclose(value.numpy(), their_opt.state_dict()["state"][0][key].numpy(), rtol=1e-12)
    # Fresh optimizers resumed from the state dicts take the same next step in both libraries
    # (loading casts float state such as NAdam's float32 mu_product to the parameter's dtype).
    our_copies = [numdiff.tensor(p.detach().numpy().copy(), requires_grad=True) for p in ours]
    their_copies = [torch.tensor(q.detach().numpy().copy(), requires_grad=True) for q in theirs]
    our_resumed = getattr(optim, name)(our_copies, **kwargs)
    our_resumed.load_state_dict(saved)
    their_resumed = getattr(torch.optim, name)(their_copies, foreach=False, **kwargs)
    their_resumed.load_state_dict(their_opt.state_dict())
    for c, d in zip(our_copies, their_copies):
        g = np.full(c.shape, 0.3)
        c.grad, d.grad = numdiff.tensor(g), torch.tensor(g)
    our_resumed.step()
    their_resumed.step()
    for c, d in zip(our_copies, their_copies):
        np.testing.assert_allclose(c.detach().numpy(), d.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    "name,kwargs,message",
    [
        ("Adadelta", {"lr": -1.0}, "Invalid learning rate: -1.0"),
        ("Adadelta", {"rho": 1.5}, "Invalid rho value: 1.5"),
        ("Adadelta", {"eps": -1e-6}, "Invalid epsilon value"),
        ("Adamax", {"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0"),
        ("Adamax", {"weight_decay": -0.1}, "Invalid weight_decay value: -0.1"),
        ("NAdam", {"momentum_decay": -1.0}, "Invalid momentum_decay value: -1.0"),
        ("NAdam", {"betas": (0.9, -0.1)}, "Invalid beta parameter at index 1"),
        ("RAdam", {"lr": -0.1}, "Invalid learning rate"),
        ("RAdam", {"betas": (0.9,)}, "betas must be a pair"),
    ],
)
def test_bad_arguments_raise_like_torch(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        getattr(optim, name)([numdiff.zeros(2, requires_grad=True)], **kwargs)
    if kwargs.get("betas") == (0.9,):  # torch indexes a 1-tuple of betas before checking it
        with pytest.raises(IndexError):
            getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
        return
    with pytest.raises(ValueError, match=message):  # the same words as PyTorch's
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)


def test_parameters_without_gradients_are_left_alone():
    w, frozen = numdiff.ones(2, requires_grad=True), numdiff.ones(2, requires_grad=True)
    opt = optim.NAdam([w, frozen], lr=0.1)
    w.grad = numdiff.ones(2)
    opt.step()
    assert frozen.tolist() == [1.0, 1.0] and w.tolist() != [1.0, 1.0]
    assert len(opt.state[frozen]) == 0
