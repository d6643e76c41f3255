"""std's scale and zero mask and logsumexp's shift are gradient constants that eager calls on host
arrays compute with NumPy (ops._reduction_constants.eager_host_data); the op path computes them under
transforms and compile traces. Both must give the same bits, values and gradients; and the short
paths of dim normalisation must keep the op-named errors."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.ops import moments, norms

torch = pytest.importorskip("torch")

CASES = [
    ((16, 32), None), ((16, 32), 1), ((16, 32), -2), ((4, 5, 6), (0, 2)), ((3, 0, 2), 1),
    ((0,), None), ((), None), ((7,), 0), ((2, 3), (0, 1)), ((1, 9), 1),
]


def _values(shape, dtype, spread, rng):
    a = (rng.standard_normal(shape) * spread).astype(dtype)
    if a.size > 2:
        a.flat[0] = a.flat[-1]  # a tie for amax
    return a


def _run(fn, a, dims):
    x = numdiff.tensor(a, requires_grad=True)
    y = fn(x, dims)
    y.sum().backward()
    return y.detach().numpy().copy(), x.grad.numpy().copy()


def _std(x, dims):
    return x.std() if dims is None else numdiff.std(x, dims, keepdim=True)


def _logsumexp(x, dims):
    return numdiff.logsumexp(x, () if dims is None else dims)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spread", [1.0, 1e-39, 1e30, np.inf])
@pytest.mark.parametrize("fn", [_std, _logsumexp], ids=["std", "logsumexp"])
def test_host_constants_give_the_op_paths_bits(fn, spread, dtype, monkeypatch):
    rng = np.random.default_rng(7)
    for shape, dims in CASES:
        a = _values(shape, dtype, 1.0 if spread is np.inf else spread, rng)
        if spread is np.inf and a.size:
            a.flat[a.size // 2] = np.inf  # a non-finite group: scale and shift fall back to 1 and 0
        with np.errstate(all="ignore"):
            host = _run(fn, a, dims)
            with monkeypatch.context() as patch:
                patch.setattr(moments, "eager_host_data", lambda t: None)
                ops = _run(fn, a, dims)
        for got, want in zip(host, ops):
            assert got.dtype == want.dtype and got.shape == want.shape, (shape, dims)
            assert got.tobytes() == want.tobytes(), (shape, dims, got, want)


def test_host_constants_match_torch_values_and_gradients():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 10))
    for dims in (None, 1, (0, 1)):
        x = torch.tensor(a, requires_grad=True)
        (x.std() if dims is None else x.std(dims)).sum().backward()
        y, g = _run(lambda t, d: t.std() if d is None else t.std(d), a, dims)
        np.testing.assert_allclose(g, x.grad.numpy(), rtol=1e-12, atol=1e-14)
        x = torch.tensor(a, requires_grad=True)
        torch.logsumexp(x, 1 if dims is None else dims).sum().backward()
        y, g = _run(numdiff.logsumexp, a, 1 if dims is None else dims)
        np.testing.assert_allclose(g, x.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_std_gradient_checks_in_float64():
    x = numdiff.tensor(np.random.default_rng(5).standard_normal((3, 4)), requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: numdiff.std(t, 1), (x,))
    assert numdiff.autograd.gradcheck(lambda t: numdiff.logsumexp(t, (0, 1)), (x,))


def test_under_vmap_the_op_path_gives_each_samples_result():
    a = np.random.default_rng(11).standard_normal((3, 5, 4))
    batched = numdiff.func.vmap(lambda t: numdiff.std(t, 1))(numdiff.tensor(a))
    looped = np.stack([numdiff.std(numdiff.tensor(row), 1).numpy() for row in a])
    np.testing.assert_allclose(batched.numpy(), looped, rtol=1e-13)
    batched = numdiff.func.vmap(lambda t: numdiff.logsumexp(t, 0))(numdiff.tensor(a))
    looped = np.stack([numdiff.logsumexp(numdiff.tensor(row), 0).numpy() for row in a])
    np.testing.assert_allclose(batched.numpy(), looped, rtol=1e-13)


@pytest.mark.parametrize("dim", [-3, 2, 5])
def test_an_out_of_range_dim_names_the_op_and_the_range(dim):
    x = numdiff.ones(2, 3)
    for op in ("sum", "mean", "std", "var"):
        with pytest.raises(IndexError, match=rf"{op}: dimension {dim} is out of range"):
            getattr(x, op)(dim)


def test_a_float_dim_is_refused_by_name():
    with pytest.raises(TypeError, match="sum: dim must be"):
        numdiff.ones(2, 3).sum(1.0)


@pytest.mark.parametrize("dim", [0, 1, -1, -2, np.int64(1), None, (), (0, -1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_sum_dims_match_torch(dim, dtype):
    a = np.arange(12, dtype=dtype).reshape(3, 4)
    t_dim = list(dim) if isinstance(dim, tuple) else (int(dim) if dim is not None else None)
    want = torch.tensor(a).sum() if t_dim is None else torch.tensor(a).sum(t_dim)
    got = numdiff.tensor(a).sum() if dim is None else numdiff.tensor(a).sum(dim)
    assert got.numpy().dtype == want.numpy().dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())


EXTREME_CASES = [((16, 32), (1,)), ((16, 32), (0,)), ((4, 5, 6), (0, 2)), ((4, 5, 6), (0, 1, 2)),
                 ((3, 0, 2), (0,)), ((), ()), ((7,), (0,))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["amax", "amin", "max", "min"])
def test_extremes_first_order_gradient_gives_the_recorded_backwards_bits(name, keepdim, dtype):
    """The first-order backward computes in NumPy; create_graph=True records the ops: same bits."""
    rng = np.random.default_rng(2)
    for shape, dims in EXTREME_CASES:
        if name in ("max", "min") and (keepdim or len(dims) != len(shape)):
            continue  # max()/min() of the whole tensor only: their NaN-sharing rule
        a = rng.integers(-2, 3, shape).astype(dtype)  # many ties
        if a.size > 3:
            a.flat[3] = np.nan
        g = rng.standard_normal(tuple(1 if i in dims else n for i, n in enumerate(shape)) if keepdim else
                                tuple(n for i, n in enumerate(shape) if i not in dims)).astype(dtype)
        results = []
        for create_graph in (False, True):
            x = numdiff.tensor(a, requires_grad=True)
            y = getattr(x, name)() if name in ("max", "min") else getattr(numdiff, name)(x, dims, keepdim)
            (grad,) = numdiff.autograd.grad(y, x, numdiff.tensor(g), create_graph=create_graph)
            results.append(grad.detach().numpy())
        assert results[0].dtype == results[1].dtype and results[0].shape == a.shape
        assert results[0].tobytes() == results[1].tobytes(), (name, shape, dims, keepdim)
        t = torch.tensor(a, requires_grad=True)
        ty = getattr(t, name)() if name in ("max", "min") else getattr(torch, name)(t, list(dims), keepdim)
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(results[0], t.grad.numpy(), rtol=1e-6, equal_nan=True)


def test_amax_gradient_checks_in_float64():
    x = numdiff.tensor(np.random.default_rng(4).standard_normal((3, 5)), requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: numdiff.amax(t, 1), (x,))
    assert numdiff.autograd.gradcheck(lambda t: numdiff.amin(t, (0, 1), keepdim=True), (x,))


@pytest.mark.parametrize("p", [2, 3.0, "fro"])
def test_norm_with_zero_groups_gives_the_op_paths_bits_and_torchs_gradient(p, monkeypatch):
    a = np.random.default_rng(6).standard_normal((5, 4))
    a[1] = 0.0  # a zero norm: value and gradient 0
    host = _run(lambda t, d: numdiff.norm(t, p, d), a, 1)
    with monkeypatch.context() as patch:
        patch.setattr(norms, "eager_host_data", lambda t: None)
        ops = _run(lambda t, d: numdiff.norm(t, p, d), a, 1)
    assert host[0].tobytes() == ops[0].tobytes() and host[1].tobytes() == ops[1].tobytes()
    t = torch.tensor(a, requires_grad=True)
    torch.norm(t, p, 1).sum().backward()
    np.testing.assert_allclose(host[1], t.grad.numpy(), rtol=1e-12, atol=1e-15)


def _penalty_grads(a, p, dims, keepdim):
    """A gradient penalty through norm: the norm, its input gradient (create_graph) and the gradient
    of a penalty on that gradient, as arrays."""
    x = numdiff.tensor(a, requires_grad=True)
    y = numdiff.norm(x * 1.5, p, dims, keepdim)
    (slope,) = numdiff.autograd.grad(y.sum(), x, create_graph=True)
    penalty = ((numdiff.norm(slope, p, dims, keepdim) - 1) ** 2).mean() + (y**2).sum()
    penalty.backward()
    return [y.detach().numpy().copy(), slope.detach().numpy().copy(), x.grad.numpy().copy()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("p", [2, 3.0, "fro"])
@pytest.mark.parametrize(("dims", "keepdim"), [(1, False), ((0, 2), True), (None, False)])
def test_norm_without_zero_groups_gives_the_op_paths_bits_to_second_order(dims, keepdim, p, dtype, monkeypatch):
    """With no zero total, eager host norms skip the two masking wheres (the identity there):
    values, gradients and second-order gradients keep the op path's bits, and torch's numbers."""
    a = np.random.default_rng(8).standard_normal((3, 4, 5)).astype(dtype)
    if p == "fro" and dims == 1:
        dims = (1, 2)
    host = _penalty_grads(a, p, dims, keepdim)
    with monkeypatch.context() as patch:
        patch.setattr(norms, "eager_host_data", lambda t: None)
        ops = _penalty_grads(a, p, dims, keepdim)
    for got, want in zip(host, ops):
        assert got.dtype == want.dtype == dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes(), (p, dims, got, want)
    t = torch.tensor(a, requires_grad=True)
    ty = torch.norm(t * 1.5, p, dims, keepdim)
    (tslope,) = torch.autograd.grad(ty.sum(), t, create_graph=True)
    (((torch.norm(tslope, p, dims, keepdim) - 1) ** 2).mean() + (ty**2).sum()).backward()
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-12}
    for got, want in zip(host, (ty.detach(), tslope.detach(), t.grad)):
        np.testing.assert_allclose(got, want.numpy(), **tol)


def test_norm_without_zero_groups_checks_gradients_to_second_order_in_float64():
    x = numdiff.tensor(np.random.default_rng(9).standard_normal((4, 3)) + 0.5, requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: numdiff.norm(t, 2, 1), (x,))
    assert numdiff.autograd.gradgradcheck(lambda t: numdiff.norm(t, 2, 1), (x,))
    assert numdiff.autograd.gradgradcheck(lambda t: numdiff.norm(t, 3.0, 0, True), (x,))


def test_norm_bad_input_names_the_op_and_the_values():
    with pytest.raises(TypeError, match=r"norm: expected a floating point tensor as input, got .*int64"):
        numdiff.norm(numdiff.ones(2, 3, dtype=numdiff.int64), 2, 1)
    with pytest.raises(ValueError, match=r"norm: p='nuc' needs two dims \(a matrix\), got dims \(1,\) of shape \(2, 3\)"):
        numdiff.norm(numdiff.ones(2, 3), "nuc", 1)
