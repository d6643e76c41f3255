"""The products and reductions a create_graph backward records (Linear's, Matmul's) and the
direct 2-D product behind Matmul's forward (numdiff.ops.linalg._fresh_product): the same bits as
the checking kernels for every operand layout, second derivatives against torch and by
gradgradcheck, and bad operands refused before a kernel runs."""

import numpy as np
import pytest
import torch

import numdiff
from numdiff.ops import linalg

LAYOUTS = ["c", "transposed", "strided"]


def _laid_out(rng, shape, layout, dtype):
    if layout == "c":
        return rng.standard_normal(shape).astype(dtype)
    if layout == "transposed":  # the transpose of a C-contiguous array (a .mT view, a weight.t())
        return np.ascontiguousarray(rng.standard_normal(shape[::-1]).astype(dtype)).T
    return rng.standard_normal((shape[0], 2 * shape[1])).astype(dtype)[:, ::2]  # neither layout


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout_b", LAYOUTS)
@pytest.mark.parametrize("layout_a", LAYOUTS)
def test_the_direct_product_gives_the_checking_kernels_bits(layout_a, layout_b, dtype):
    rng = np.random.default_rng(LAYOUTS.index(layout_a) * 3 + LAYOUTS.index(layout_b))
    a, b = _laid_out(rng, (9, 13), layout_a, dtype), _laid_out(rng, (13, 6), layout_b, dtype)
    direct, checked = np.empty((9, 6), dtype), np.empty((9, 6), dtype)
    linalg._fresh_product(a, b, direct)
    linalg._product(a, b, checked)
    np.testing.assert_array_equal(direct, checked)
    np.testing.assert_allclose(direct, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_the_direct_product_leaves_mismatched_operands_to_the_checking_kernels():
    a, b, out = np.ones((3, 4)), np.ones((5, 2)), np.empty((3, 2))
    with pytest.raises(ValueError, match="gemm_nn"):
        linalg._fresh_product(a, b, out)
    with pytest.raises((TypeError, ValueError), match="gemm_nn"):
        linalg._fresh_product(np.ones((3, 4)), np.ones((4, 2), np.float32), out)


def test_matmul_refuses_mismatched_operands_naming_the_op_and_shapes():
    with pytest.raises(ValueError, match=r"matmul: size mismatch.*\(3, 4\).*\(5, 2\)"):
        numdiff.matmul(numdiff.ones(3, 4), numdiff.ones(5, 2))


def _mlp_double_backward(lib, x_np, params_np, bias):
    x = lib.tensor(x_np, requires_grad=True)
    params = [lib.tensor(p, requires_grad=True) for p in params_np]
    w1, b1, w2, b2 = params
    fn = lib.nn.functional
    hidden = lib.tanh(fn.linear(x, w1, b1 if bias else None))
    out = fn.linear(hidden, w2, b2 if bias else None)
    (dx,) = lib.autograd.grad(out.sum(), x, create_graph=True)
    grads = lib.autograd.grad((dx**2).sum() + out.square().mean(), params, allow_unused=True)
    return [None if g is None else g.detach().numpy() for g in grads]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("x_shape", [(7, 5), (2, 3, 5)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_double_backward_matches_torch(x_shape, bias, dtype):
    rng = np.random.default_rng(len(x_shape))
    x = rng.standard_normal(x_shape).astype(dtype)
    params = [rng.standard_normal(s).astype(dtype) * 0.5 for s in ((6, 5), (6,), (3, 6), (3,))]
    got = _mlp_double_backward(numdiff, x, params, bias)
    expected = _mlp_double_backward(torch, x, params, bias)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for g, e in zip(got, expected):
        assert (g is None) == (e is None)
        if g is not None:
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol)


@pytest.mark.parametrize("x_shape", [(4, 3), (2, 2, 3)], ids=str)
def test_linear_gradcheck_and_gradgradcheck(x_shape):
    rng = np.random.default_rng(7)
    x = numdiff.tensor(rng.standard_normal(x_shape), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal(5), requires_grad=True)
    f = numdiff.nn.functional.linear
    assert numdiff.autograd.gradcheck(f, (x, w, b))
    assert numdiff.autograd.gradgradcheck(f, (x, w, b))


def test_linear_refuses_mismatched_features_naming_the_shapes():
    with pytest.raises(ValueError, match=r"linear: input \(4, 3\) must end with in_features=2"):
        numdiff.nn.functional.linear(numdiff.ones(4, 3), numdiff.ones(5, 2))


REDUCTIONS = [((4, 3, 5), dims, keepdim) for dims in [None, 0, (0, 1), 1, (1, 2), 2, (0, 2)] for keepdim in (False, True)]


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "prod"])
@pytest.mark.parametrize("shape, dims, keepdim", REDUCTIONS, ids=str)
def test_a_reduction_s_create_graph_backward_matches_torch(op, shape, dims, keepdim):
    # The recorded backward puts reduced dims back by a reshape and an expand, or an expand alone
    # where the reduced dims lead and are not kept (numdiff.ops.reduction._expand_back).
    rng = np.random.default_rng(len(str(dims)))
    data = rng.standard_normal(shape) * 0.5 + 1.5
    weights = rng.standard_normal(shape)

    def second(lib):
        x = lib.tensor(data, requires_grad=True)
        if dims is None:
            out = getattr(lib, op)(x)
        else:
            out = getattr(lib, op)(x, dims, keepdim=keepdim) if op != "prod" or isinstance(dims, int) else None
        if out is None:
            return None
        (g,) = lib.autograd.grad((out * out).sum(), x, create_graph=True)
        assert tuple(g.shape) == shape
        (gg,) = lib.autograd.grad((g * lib.tensor(weights)).sum(), x)
        return g.detach().numpy(), gg.numpy()

    got, expected = second(numdiff), second(torch)
    assert (got is None) == (expected is None)
    if got is not None:
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dims, keepdim", [((0,), False), ((1,), False), ((0, 1), True), (None, False)], ids=str)
def test_sum_and_mean_gradgradcheck(dims, keepdim):
    x = numdiff.tensor(np.random.default_rng(2).standard_normal((3, 4)), requires_grad=True)
    for fn in (lambda t: (t.sum(dims, keepdim=keepdim) if dims else t.sum()) ** 2,
               lambda t: (t.mean(dims, keepdim=keepdim) if dims else t.mean()) ** 3):
        assert numdiff.autograd.gradcheck(fn, (x,))
        assert numdiff.autograd.gradgradcheck(fn, (x,))


def test_sum_refuses_a_dim_out_of_range_naming_it():
    with pytest.raises((IndexError, ValueError), match="sum"):
        numdiff.ones(2, 3).sum(5)


@pytest.mark.parametrize("shape", [(), (7,), (16, 8), (3, 4, 5)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", [1.0, 0.3, -7.5])
def test_mse_loss_s_create_graph_gradient_has_the_first_order_bits(shape, dtype, seed):
    # The recorded form scales by g * (2 / n), the first-order one by 2 and then g * (1 / n).
    rng = np.random.default_rng(len(shape))
    x = numdiff.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
    t = numdiff.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
    grad_output = numdiff.tensor(np.asarray(seed, dtype))
    first = numdiff.autograd.grad(numdiff.nn.functional.mse_loss(x, t), (x, t), grad_output)
    recorded = numdiff.autograd.grad(numdiff.nn.functional.mse_loss(x, t), (x, t), grad_output, create_graph=True)
    for a, b in zip(first, recorded):
        assert b.requires_grad
        np.testing.assert_array_equal(a.numpy(), b.detach().numpy())


def test_mse_loss_double_backward_matches_torch():
    rng = np.random.default_rng(5)
    x_np, t_np, w_np = (rng.standard_normal((6, 4)) for _ in range(3))

    def second(lib):
        x, t = lib.tensor(x_np, requires_grad=True), lib.tensor(t_np, requires_grad=True)
        gx, gt = lib.autograd.grad(lib.nn.functional.mse_loss(x, t) ** 2, (x, t), create_graph=True)
        return [g.numpy() for g in lib.autograd.grad((gx * lib.tensor(w_np)).sum() + gt.square().sum(), (x, t))]

    for a, b in zip(second(numdiff), second(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_mse_loss_refuses_mismatched_shapes_naming_them():
    with pytest.warns(UserWarning, match="mse_loss"), pytest.raises(ValueError, match=r"\(2, 3\) and \(4,\)"):
        numdiff.nn.functional.mse_loss(numdiff.ones(2, 3), numdiff.ones(4))
