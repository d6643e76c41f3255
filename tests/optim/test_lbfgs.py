"""LBFGS: step-for-step parity with torch.optim.LBFGS, the strong Wolfe line search, state, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.optim._line_search import cubic_minimizer, strong_wolfe

RNG = np.random.default_rng(0)
X = RNG.standard_normal((40, 3))
Y = (X @ np.array([1.5, -2.0, 0.5]) + 0.3 * RNG.standard_normal(40) > 0).astype(np.float64)


def _logistic_fit(lib, steps: int, **kwargs):
    """Regularised logistic regression fitted by `lib`'s LBFGS; the loss after each step() and the state."""
    w = lib.tensor(np.zeros(3), requires_grad=True)
    b = lib.tensor(np.zeros(1), requires_grad=True)
    x, y = lib.tensor(X), lib.tensor(Y)
    opt = lib.optim.LBFGS([w, b], **kwargs)

    def closure():
        opt.zero_grad()
        z = x @ w + b
        loss = (lib.log(1 + lib.exp(-z)) + (1 - y) * z).mean() + 0.01 * (w * w).sum()
        loss.backward()
        return loss

    losses = [float(opt.step(closure).detach()) for _ in range(steps)]
    return np.array(losses), np.concatenate([w.detach().numpy(), b.detach().numpy()]), opt


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"history_size": 3, "max_iter": 5}, {"lr": 0.5, "max_iter": 7}, {"max_iter": 3, "max_eval": 2},
     {"line_search_fn": "strong_wolfe"}, {"line_search_fn": "strong_wolfe", "history_size": 2, "max_iter": 4}],
)
def test_matches_torch_step_for_step(kwargs):
    our_losses, our_params, our_opt = _logistic_fit(numdiff, 4, **kwargs)
    their_losses, their_params, their_opt = _logistic_fit(torch, 4, **kwargs)
    np.testing.assert_allclose(our_losses, their_losses, rtol=1e-12)
    np.testing.assert_allclose(our_params, their_params, rtol=1e-10, atol=1e-12)
    ours, theirs = our_opt.state_dict()["state"][0], their_opt.state_dict()["state"][0]
    assert (ours["func_evals"], ours["n_iter"]) == (theirs["func_evals"], theirs["n_iter"])


def _rosenbrock_fit(lib, **kwargs):
    x = lib.tensor(np.array([-1.5, 2.0]), requires_grad=True)
    opt = lib.optim.LBFGS([x], **kwargs)

    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    return x.detach().numpy()


def test_strong_wolfe_solves_rosenbrock_like_torch():
    ours = _rosenbrock_fit(numdiff, line_search_fn="strong_wolfe", max_iter=50)
    np.testing.assert_allclose(ours, [1.0, 1.0], atol=1e-4)
    np.testing.assert_allclose(ours, _rosenbrock_fit(torch, line_search_fn="strong_wolfe", max_iter=50), atol=1e-6)


def test_without_line_search_a_large_lr_diverges_where_strong_wolfe_converges():
    assert _rosenbrock_fit(numdiff, line_search_fn="strong_wolfe") == pytest.approx([1.0, 1.0], abs=1e-3)
    np.testing.assert_allclose(_rosenbrock_fit(numdiff, lr=0.1, max_iter=30), _rosenbrock_fit(torch, lr=0.1, max_iter=30))


def test_line_search_steps_satisfy_the_strong_wolfe_conditions():
    # f(t) = (t - 3)^2 + 0.1 t^4 along d = 1 from x = 0: the first trial step 1 is too short.
    def evaluate(t):
        return (t - 3) ** 2 + 0.1 * t**4, None, 2 * (t - 3) + 0.4 * t**3

    f0, _, dphi0 = evaluate(0.0)
    for start in (0.01, 1.0, 10.0, 100.0):
        f, _, t, evaluations = strong_wolfe(evaluate, start, f0, None, dphi0, direction_max=1.0)
        assert f <= f0 + 1e-4 * t * dphi0
        assert abs(evaluate(t)[2]) <= 0.9 * abs(dphi0)
        assert evaluations <= 25


def test_cubic_minimizer_is_exact_on_a_cubic():
    f = lambda t: t**3 - 3 * t  # noqa: E731 - minimum at t = 1
    g = lambda t: 3 * t**2 - 3  # noqa: E731
    assert cubic_minimizer(0.0, f(0.0), g(0.0), 2.0, f(2.0), g(2.0)) == pytest.approx(1.0)
    assert cubic_minimizer(1.0, 0.0, 1.0, 1.0, 0.0, 1.0) is None


def test_state_dict_round_trip_resumes_the_same_iterations():
    _, _, opt = _logistic_fit(numdiff, 1, max_iter=2)
    saved = opt.state_dict()
    iterations_before = saved["state"][0]["n_iter"]  # the state dict holds live state, as in torch
    assert {"d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss", "n_iter"} <= set(saved["state"][0])
    params = opt.param_groups[0]["params"]
    copies = [numdiff.tensor(p.detach().numpy().copy(), requires_grad=True) for p in params]
    resumed = numdiff.optim.LBFGS(copies, max_iter=2)
    resumed.load_state_dict(saved)
    x, y = numdiff.tensor(X), numdiff.tensor(Y)
    for optimizer, (w, b) in ((opt, params), (resumed, copies)):
        def closure(optimizer=optimizer, w=w, b=b):
            optimizer.zero_grad()
            z = x @ w + b
            loss = (numdiff.log(1 + numdiff.exp(-z)) + (1 - y) * z).mean() + 0.01 * (w * w).sum()
            loss.backward()
            return loss

        optimizer.step(closure)
    for p, c in zip(params, copies):
        np.testing.assert_array_equal(p.detach().numpy(), c.detach().numpy())
    assert resumed.state[copies[0]]["n_iter"] == opt.state[params[0]]["n_iter"] == iterations_before + 1


def test_stops_at_once_when_the_gradient_is_already_small():
    w = numdiff.tensor([0.0], requires_grad=True)
    opt = numdiff.optim.LBFGS([w])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    assert len(calls) == 1 and w.tolist() == [0.0]


@pytest.mark.parametrize(
    "kwargs,message",
    [({"line_search_fn": "backtracking"}, "only 'strong_wolfe' is supported"), ({"lr": -1.0}, "Invalid learning rate"),
     ({"history_size": 0}, "Invalid history_size"), ({"max_iter": 0}, "Invalid max_iter")],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        numdiff.optim.LBFGS([numdiff.zeros(2, requires_grad=True)], **kwargs)


def test_parameter_groups_and_missing_closure_are_refused():
    a, b = numdiff.zeros(1, requires_grad=True), numdiff.zeros(1, requires_grad=True)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        numdiff.optim.LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(RuntimeError, match="needs a closure"):
        numdiff.optim.LBFGS([a]).step(None)
