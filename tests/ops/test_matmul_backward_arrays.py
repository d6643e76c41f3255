"""Matmul's first-order backward on arrays (numdiff.ops.linalg._matmul_backward_arrays) against
the recorded form that create_graph runs, and against torch: every layout and batch broadcast."""

import numpy as np
import pytest
import torch

import numdiff

CASES = [
    ((5, 7), (7, 3)),
    ((16, 1, 12), (16, 12, 64)),
    ((4, 8, 16, 32), (4, 8, 32, 16)),
    ((16, 12, 64), (64, 9)),
    ((3, 1, 5, 6), (1, 4, 6, 2)),  # both batches broadcast
    ((2, 5, 6), (6,)),
    ((6,), (3, 6, 4)),
    ((7, 0), (0, 3)),  # an empty inner dimension: zero gradients
]


def _grads(a, b, create_graph):
    out = numdiff.matmul(a, b)
    seed = numdiff.tensor(np.linspace(-1.0, 1.0, out.numel()).reshape(tuple(out.shape)).astype(a.detach().numpy().dtype))
    return numdiff.autograd.grad(out, (a, b), seed, create_graph=create_graph)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", CASES, ids=str)
def test_array_backward_equals_the_recorded_form_and_torch(shapes, dtype):
    rng = np.random.default_rng(len(str(shapes)))
    a_np, b_np = (rng.standard_normal(s).astype(dtype) for s in shapes)
    a = numdiff.tensor(a_np, requires_grad=True)
    b = numdiff.tensor(b_np, requires_grad=True)
    direct = _grads(a, b, create_graph=False)
    recorded = _grads(a, b, create_graph=True)
    for d, r in zip(direct, recorded):
        np.testing.assert_array_equal(d.numpy(), r.detach().numpy())
    ta, tb = torch.tensor(a_np, requires_grad=True), torch.tensor(b_np, requires_grad=True)
    tout = torch.matmul(ta, tb)
    seed = torch.tensor(np.linspace(-1.0, 1.0, tout.numel()).reshape(tout.shape).astype(dtype))
    expected = torch.autograd.grad(tout, (ta, tb), seed)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for d, e in zip(direct, expected):
        assert tuple(d.shape) == tuple(e.shape)
        np.testing.assert_allclose(d.numpy(), e.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("which", ["a", "b"])
def test_a_transposed_matrix_gets_its_gradient_in_its_own_layout(which):
    rng = np.random.default_rng(3)
    a = numdiff.tensor(rng.standard_normal((6, 5)), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal((4, 6)), requires_grad=True)  # stored as b.T's transpose
    x, y = (a.t(), b.t()) if which == "a" else (b, a)
    seed = numdiff.ones(tuple(numdiff.matmul(x, y).shape), dtype=numdiff.float64)
    direct = numdiff.autograd.grad(numdiff.matmul(x, y), (a, b), seed)
    recorded = numdiff.autograd.grad(numdiff.matmul(x, y), (a, b), seed, create_graph=True)
    for d, r in zip(direct, recorded):
        np.testing.assert_array_equal(d.numpy(), r.detach().numpy())


def test_float64_gradcheck_through_a_broadcast_batch():
    rng = np.random.default_rng(4)
    a = numdiff.tensor(rng.standard_normal((3, 1, 2, 4)), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal((2, 4, 3)), requires_grad=True)
    assert numdiff.autograd.gradcheck(numdiff.matmul, (a, b))


def test_mismatched_batches_are_refused_before_any_kernel():
    a = numdiff.ones(3, 2, 4, requires_grad=True)
    with pytest.raises(ValueError, match="matmul"):
        numdiff.matmul(a, numdiff.ones(5, 4, 2))
