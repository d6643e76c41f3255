"""torch.autograd.functional's results are detached unless create_graph=True, as PyTorch's are:
`jacobian(f, x).numpy()` works on an x that requires grad, and create_graph=True keeps the graph."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff


def _calls(lib, x):
    functional = lib.autograd.functional
    scalar = lambda v: (v**3).sum()  # noqa: E731
    vector = lambda v: v.sin() * 2  # noqa: E731
    v = lib.ones_like(x)
    return {
        "jacobian": lambda cg: functional.jacobian(vector, x, create_graph=cg),
        "hessian": lambda cg: functional.hessian(scalar, x, create_graph=cg),
        "vjp": lambda cg: functional.vjp(vector, x, v, create_graph=cg),
        "jvp": lambda cg: functional.jvp(vector, x, v, create_graph=cg),
        "vhp": lambda cg: functional.vhp(scalar, x, v, create_graph=cg),
        "hvp": lambda cg: functional.hvp(scalar, x, v, create_graph=cg),
    }


def _flat(result):
    if isinstance(result, tuple):
        return [t for r in result for t in _flat(r)]
    return [result]


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", ["jacobian", "hessian", "vjp", "jvp", "vhp", "hvp"])
def test_results_require_grad_exactly_where_torchs_do(name, create_graph):
    data = np.array([0.3, -1.2, 2.0])
    got = _flat(_calls(numdiff, numdiff.tensor(data, requires_grad=True))[name](create_graph))
    want = _flat(_calls(torch, torch.tensor(data, requires_grad=True))[name](create_graph))
    assert [t.requires_grad for t in got] == [t.requires_grad for t in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_a_jacobian_without_create_graph_converts_to_numpy_and_with_it_differentiates():
    x = numdiff.tensor([0.5, 1.5], dtype=numdiff.float64, requires_grad=True)
    jac = numdiff.autograd.functional.jacobian(lambda v: v.exp(), x)
    np.testing.assert_allclose(jac.numpy(), np.diag(np.exp([0.5, 1.5])))
    jac = numdiff.autograd.functional.jacobian(lambda v: v.exp(), x, create_graph=True)
    (grad,) = numdiff.autograd.grad(jac.sum(), x)
    np.testing.assert_allclose(grad.numpy(), np.exp([0.5, 1.5]))
