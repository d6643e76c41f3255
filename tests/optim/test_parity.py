"""Every optimizer and option combination matches torch.optim step for step (same weights, same grads)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numdiff
from numdiff import optim

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (5,), ()]

CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "weight_decay": 0.1, "maximize": True}),
    ("SGD", {"lr": 0.05, "weight_decay": 0.2}),
    ("Adam", {}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.05, "maximize": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("AdamW", {}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.3, "amsgrad": True}),
    ("AdamW", {"lr": 0.01, "maximize": True}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "eps": 1e-6}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5, "weight_decay": 0.1, "maximize": True}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05}),
    ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.2, "eps": 1e-6}),
    ("Adagrad", {"lr": 0.1, "weight_decay": 0.1, "maximize": True}),
]


def _case_id(case: tuple[str, dict]) -> str:
    name, kwargs = case
    return name + "".join(f"-{k}={v}" for k, v in kwargs.items())


def _run_both(name: str, kwargs: dict, dtype: np.dtype, steps: int, seed: int):
    """Yield (numdiff params, torch params, numdiff optimizer, torch optimizer) after each step."""
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    nd_params = [numdiff.tensor(a.copy(), requires_grad=True) for a in init]
    th_params = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    nd_opt = getattr(optim, name)(nd_params, **kwargs)
    th_opt = getattr(torch.optim, name)(th_params, foreach=False, **kwargs)
    for _ in range(steps):
        for p, q in zip(nd_params, th_params):
            g = rng.standard_normal(p.shape).astype(dtype)
            p.grad = numdiff.tensor(g)
            q.grad = torch.tensor(g)
        nd_opt.step()
        th_opt.step()
        yield nd_params, th_params, nd_opt, th_opt


def _assert_state_equal(nd_opt, th_opt, rtol: float, atol: float) -> None:
    nd_state = nd_opt.state_dict()["state"]
    th_state = th_opt.state_dict()["state"]
    assert nd_state.keys() == th_state.keys()
    for index, th_entries in th_state.items():
        assert set(nd_state[index]) == set(th_entries), index
        for key, th_value in th_entries.items():
            nd_value = nd_state[index][key].detach().numpy()
            np.testing.assert_allclose(nd_value, th_value.detach().numpy(), rtol=rtol, atol=atol, err_msg=key)
            assert nd_value.dtype == th_value.detach().numpy().dtype, key


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_float32_updates_and_state_match_torch(case):
    name, kwargs = case
    for nd_params, th_params, nd_opt, th_opt in _run_both(name, kwargs, np.float32, steps=6, seed=0):
        for p, q in zip(nd_params, th_params):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=2e-6, atol=2e-6)
        _assert_state_equal(nd_opt, th_opt, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("case", CASES[::3], ids=_case_id)
def test_float64_updates_match_torch_to_double_rounding(case):
    name, kwargs = case
    for nd_params, th_params, _, _ in _run_both(name, kwargs, np.float64, steps=4, seed=1):
        for p, q in zip(nd_params, th_params):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-13, atol=1e-14)


def test_param_groups_with_their_own_options_match_torch():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    nd_a, nd_b = numdiff.tensor(a, requires_grad=True), numdiff.tensor(b, requires_grad=True)
    th_a, th_b = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    nd_opt = optim.SGD(
        [{"params": [nd_a]}, {"params": [nd_b], "lr": 0.5, "nesterov": True}], lr=0.1, momentum=0.9
    )
    th_opt = torch.optim.SGD(
        [{"params": [th_a]}, {"params": [th_b], "lr": 0.5, "nesterov": True}],
        lr=0.1,
        momentum=0.9,
        foreach=False,
    )
    for _ in range(3):
        for nd, th in ((nd_a, th_a), (nd_b, th_b)):
            g = rng.standard_normal(nd.shape).astype(np.float32)
            nd.grad, th.grad = numdiff.tensor(g), torch.tensor(g)
        nd_opt.step()
        th_opt.step()
    np.testing.assert_allclose(nd_a.detach().numpy(), th_a.detach().numpy(), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(nd_b.detach().numpy(), th_b.detach().numpy(), rtol=2e-6, atol=2e-6)


def test_training_a_tiny_regression_with_closure_matches_torch():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((8, 3)).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    w0 = rng.standard_normal(3).astype(np.float32)
    nd_w, th_w = numdiff.tensor(w0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    nd_x, nd_y, th_x, th_y = numdiff.tensor(x), numdiff.tensor(y), torch.tensor(x), torch.tensor(y)
    nd_opt = optim.Adam([nd_w], lr=0.05)
    th_opt = torch.optim.Adam([th_w], lr=0.05, foreach=False)

    def nd_closure():
        nd_opt.zero_grad()
        loss = (((nd_x * nd_w).sum(1) - nd_y) ** 2).mean()
        loss.backward()
        return loss

    def th_closure():
        th_opt.zero_grad()
        loss = (((th_x * th_w).sum(1) - th_y) ** 2).mean()
        loss.backward()
        return loss

    for _ in range(10):
        nd_loss = nd_opt.step(nd_closure)
        th_loss = th_opt.step(th_closure)
        assert nd_loss.item() == pytest.approx(th_loss.item(), rel=1e-5)
    np.testing.assert_allclose(nd_w.detach().numpy(), th_w.detach().numpy(), rtol=1e-5, atol=1e-6)


OPTIONS = {
    "SGD": st.fixed_dictionaries(
        {
            "lr": st.floats(0.0, 1.0),
            "momentum": st.sampled_from([0.0, 0.5, 0.9]),
            "weight_decay": st.floats(0.0, 0.5),
        },
        optional={"maximize": st.booleans(), "dampening": st.floats(0.0, 0.9)},
    ),
    "Adam": st.fixed_dictionaries(
        {"lr": st.floats(1e-4, 0.5), "betas": st.tuples(st.floats(0.0, 0.99), st.floats(0.5, 0.9999))},
        optional={
            "weight_decay": st.floats(0.0, 0.5),
            "amsgrad": st.booleans(),
            "maximize": st.booleans(),
            "eps": st.floats(1e-10, 1e-3),
        },
    ),  # fmt: skip
    "AdamW": st.fixed_dictionaries(
        {"lr": st.floats(1e-4, 0.5)}, optional={"weight_decay": st.floats(0.0, 0.5), "amsgrad": st.booleans()}
    ),
    "RMSprop": st.fixed_dictionaries(
        {"lr": st.floats(1e-4, 0.1), "alpha": st.floats(0.5, 0.999)},
        optional={
            "momentum": st.floats(0.0, 0.9),
            "centered": st.booleans(),
            "weight_decay": st.floats(0.0, 0.5),
        },
    ),
    "Adagrad": st.fixed_dictionaries(
        {"lr": st.floats(1e-4, 0.5)},
        optional={"lr_decay": st.floats(0.0, 0.5), "initial_accumulator_value": st.floats(0.0, 1.0)},
    ),
}


@st.composite
def _optimizer_cases(draw):
    name = draw(st.sampled_from(sorted(OPTIONS)))
    return name, draw(OPTIONS[name]), draw(st.integers(0, 2**16))


@settings(max_examples=40, deadline=None)
@given(_optimizer_cases())
def test_random_hyperparameters_match_torch_in_float64(case):
    name, kwargs, seed = case
    for nd_params, th_params, _, _ in _run_both(name, kwargs, np.float64, steps=3, seed=seed):
        for p, q in zip(nd_params, th_params):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-11, atol=1e-12)
