"""Rprop and ASGD match torch.optim step for step (float64 to rounding over 20 steps, float32),
their state dicts have torch's keys and values and resume the same trajectory, bad options raise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff import optim

SHAPES = [(3, 4), (5,), ()]

CASES = [
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True}),
    ("Rprop", {"lr": 0.2, "step_sizes": (0.0, 0.25)}),  # clamped from above on most steps
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 5, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.1, "lambd": 0.1, "t0": 0, "maximize": True}),
]


def _case_id(case: tuple[str, dict]) -> str:
    return case[0] + "".join(f"-{k}={v}" for k, v in case[1].items())


def _gradient(rng, step, shape, dtype):
    # A fixed part keeps some signs from one step to the next (so Rprop's steps grow), a random part
    # flips others (so they shrink and skip).
    return (0.5 * np.sign(np.arange(np.prod(shape, dtype=int)) % 3 - 0.5).reshape(shape) + rng.standard_normal(shape)).astype(dtype)


def _run_both(name, kwargs, dtype, steps, seed=0):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    ours = [numdiff.tensor(a.copy(), requires_grad=True) for a in init]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    our_opt = getattr(optim, name)(ours, **kwargs)
    their_opt = getattr(torch.optim, name)(theirs, foreach=False, **kwargs)
    for step in range(steps):
        for p, q in zip(ours, theirs):
            g = _gradient(rng, step, p.shape, dtype)
            p.grad, q.grad = numdiff.tensor(g), torch.tensor(g)
        our_opt.step()
        their_opt.step()
        yield ours, theirs, our_opt, their_opt


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_matches_torch_every_step_in_float64(case):
    for ours, theirs, _, _ in _run_both(*case, np.float64, steps=20):
        for p, q in zip(ours, theirs):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_matches_torch_in_float32(case):
    for ours, theirs, _, _ in _run_both(*case, np.float32, steps=8):
        for p, q in zip(ours, theirs):
            assert p.dtype is numdiff.float32
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_state_dict_has_torchs_keys_and_values_and_resumes(case):
    name, kwargs = case
    *_, (ours, theirs, our_opt, their_opt) = _run_both(name, kwargs, np.float64, steps=6)
    saved, their_saved = our_opt.state_dict(), their_opt.state_dict()
    for index, their_state in their_saved["state"].items():
        assert list(saved["state"][index]) == list(their_state)
        for key, value in saved["state"][index].items():
            assert value.dtype.itemsize == their_state[key].dtype.itemsize, key  # float32 step, eta, mu
            np.testing.assert_allclose(value.numpy(), their_state[key].numpy(), rtol=1e-13, atol=1e-15)
    assert saved["param_groups"][0].keys() - {"params"} <= their_saved["param_groups"][0].keys()
    # Fresh optimizers resumed from the state dicts keep following each other for 14 more steps.
    our_copies = [numdiff.tensor(p.detach().numpy().copy(), requires_grad=True) for p in ours]
    their_copies = [torch.tensor(q.detach().numpy().copy(), requires_grad=True) for q in theirs]
    our_resumed = getattr(optim, name)(our_copies, **kwargs)
    our_resumed.load_state_dict(saved)
    their_resumed = getattr(torch.optim, name)(their_copies, foreach=False, **kwargs)
    their_resumed.load_state_dict(their_saved)
    rng = np.random.default_rng(1)
    for step in range(14):
        for c, d in zip(our_copies, their_copies):
            g = _gradient(rng, step, c.shape, np.float64)
            c.grad, d.grad = numdiff.tensor(g), torch.tensor(g)
        our_resumed.step()
        their_resumed.step()
        for c, d in zip(our_copies, their_copies):
            np.testing.assert_allclose(c.detach().numpy(), d.detach().numpy(), rtol=1e-13, atol=1e-15)


def test_asgd_average_follows_the_iterates_after_t0():
    w = numdiff.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.ASGD([w], lr=0.1, lambd=0.0, t0=3)
    iterates = []
    for _ in range(8):
        w.grad = numdiff.tensor([0.5, 0.25])
        opt.step()
        iterates.append(w.detach().numpy().copy())
    # Step t uses the mu set by step t - 1, 1 / max(1, t - 1 - t0): ax = p through step t0 + 2, then
    # the running mean of the iterates from step t0 + 2 on.
    np.testing.assert_allclose(opt.state[w]["ax"].numpy(), np.mean(iterates[4:], axis=0), rtol=1e-6)


def test_rprop_uses_only_the_gradients_sign():
    a, b = numdiff.zeros(3, requires_grad=True), numdiff.zeros(3, requires_grad=True)
    opt_a, opt_b = optim.Rprop([a], lr=0.1), optim.Rprop([b], lr=0.1)
    for scale in (1.0, -3.0, 2.0, 2.0):
        a.grad = numdiff.tensor([1.0, -1.0, 0.0]) * scale
        b.grad = numdiff.tensor([1e-5, -7.0, 0.0]) * scale
        opt_a.step()
        opt_b.step()
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize(
    "name,kwargs,message",
    [
        ("Rprop", {"lr": -1.0}, r"Invalid learning rate: -1.0"),
        ("Rprop", {"etas": (1.5, 1.2)}, r"Invalid eta values: \(1.5, 1.2\)"),
        ("Rprop", {"etas": (0.5, 0.9)}, r"Invalid eta values: \(0.5, 0.9\)"),
        ("ASGD", {"lr": -0.1}, r"Invalid learning rate: -0.1"),
        ("ASGD", {"weight_decay": -1.0}, r"Invalid weight_decay value: -1.0"),
    ],
)
def test_bad_arguments_raise_like_torch(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        getattr(optim, name)([numdiff.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError):
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)


def test_rprop_refuses_inverted_step_sizes():
    with pytest.raises(ValueError, match=r"Invalid step_sizes: \(1.0, 0.1\)"):
        optim.Rprop([numdiff.zeros(2, requires_grad=True)], step_sizes=(1.0, 0.1))
