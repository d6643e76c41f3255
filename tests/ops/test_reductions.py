"""Reductions and normalizations against torch 2.13 on Hypothesis inputs: random dims and keepdim,
contiguous, transposed and strided layouts, float32 and float64; values and gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import numdiff
from tests.ops.strategies import DTYPES, LAYOUTS, assert_close, leaf, shapes, upstream, values

torch = pytest.importorskip("torch")
torch.set_num_threads(1)


@st.composite
def dims_of(draw, ndim: int):
    """None, one dim, or a tuple of distinct dims, each possibly negative."""
    if ndim == 0:
        return draw(st.sampled_from([None, 0, -1]))
    chosen = draw(st.lists(st.integers(0, ndim - 1), unique=True, min_size=1, max_size=ndim))
    chosen = [d - ndim if draw(st.booleans()) else d for d in chosen]
    return draw(st.sampled_from([None, chosen[0], tuple(chosen)]))


def _reduced_count(shape, dim) -> int:
    if dim is None:
        return math.prod(shape)
    dims = (dim,) if isinstance(dim, int) else dim
    return math.prod(shape[d] for d in dims) if shape else 1


def _torch_dim(dim):
    return list(dim) if isinstance(dim, tuple) else dim


# name: (numdiff call, torch call) with arguments (tensor, dim, keepdim)
MULTI_DIM = {
    "sum": (lambda x, d, k: x.sum(d, keepdim=k), lambda x, d, k: x.sum(d, keepdim=k)),
    "mean": (lambda x, d, k: x.mean(d, keepdim=k), lambda x, d, k: x.mean(d, keepdim=k)),
    "amax": (
        lambda x, d, k: x.amax(d if d is not None else (), keepdim=k),
        lambda x, d, k: x.amax(d if d is not None else (), keepdim=k),
    ),
    "amin": (
        lambda x, d, k: x.amin(d if d is not None else (), keepdim=k),
        lambda x, d, k: x.amin(d if d is not None else (), keepdim=k),
    ),
    "var": (lambda x, d, k: x.var(d, keepdim=k), lambda x, d, k: x.var(d, keepdim=k)),
    "std_biased": (
        lambda x, d, k: x.std(d, correction=0, keepdim=k),
        lambda x, d, k: x.std(d, correction=0, keepdim=k),
    ),
    "logsumexp": (
        lambda x, d, k: x.logsumexp(d if d is not None else tuple(range(x.ndim)), keepdim=k),
        lambda x, d, k: x.logsumexp(d if d is not None else tuple(range(x.ndim)), keepdim=k),
    ),
}


@pytest.mark.parametrize("name", sorted(MULTI_DIM))
@given(data=st.data())
def test_reduction_over_dims_matches_torch(name, data):
    ours_fn, torch_fn = MULTI_DIM[name]
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(), label="shape")
    dim = data.draw(dims_of(len(shape)), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    unique = name in ("var", "std_biased")  # a constant group has an infinite std gradient
    if unique:
        assume(_reduced_count(shape, dim) >= 2)
    array = data.draw(values(dtype, shape, unique=unique), label="x")
    x = leaf(array, data.draw(LAYOUTS, label="layout"))
    tx = torch.tensor(array, requires_grad=True)
    out, tout = ours_fn(x, dim, keepdim), torch_fn(tx, _torch_dim(dim), keepdim)
    assert_close(out, tout, dtype)
    if name == "std_biased":
        # Two float32 values a subnormal apart have a std that underflows to 0: torch's backward then
        # masks the gradient to 0, where numdiff's keeps the exact one (+-1/n of the spread's sign).
        assume(np.all(np.abs(tout.detach().numpy()) >= np.finfo(dtype).tiny))
    grad = upstream(data.draw, out.shape, dtype)
    out.backward(numdiff.tensor(grad))
    tout.backward(torch.tensor(grad))
    assert_close(x.grad, tx.grad, dtype)


@pytest.mark.parametrize("name", ["prod", "softmax", "log_softmax", "max", "min", "cumulative_prod_of_all"])
@given(data=st.data())
def test_single_dim_reduction_matches_torch(name, data):
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(min_dims=1), label="shape")
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    # prod draws zeros on purpose (one or several per group); max/min need a unique winner for the index.
    low, high = (-2.0, 2.0) if name.startswith("prod") or name.startswith("cumulative") else (-3.0, 3.0)
    array = data.draw(values(dtype, shape, low, high, unique=name in ("max", "min")), label="x")
    if name.startswith("prod") or name.startswith("cumulative"):
        # torch's prod gradient is out / x when no input is zero: with a subnormal input the product
        # underflows to 0 and torch's gradient with it, where numdiff's product of the others stays
        # exact. Compare on inputs whose product does not underflow.
        tiny = np.abs(array[array != 0])
        assume(tiny.size == 0 or tiny.min() > 1e-6)
    x = leaf(array, data.draw(LAYOUTS, label="layout"))
    tx = torch.tensor(array, requires_grad=True)
    if name == "prod":
        out, tout = x.prod(dim, keepdim=keepdim), tx.prod(dim, keepdim=keepdim)
    elif name == "cumulative_prod_of_all":
        out, tout = x.prod(), tx.prod()
    elif name in ("softmax", "log_softmax"):
        out, tout = getattr(numdiff, name)(x, dim), getattr(torch, name)(tx, dim)
    else:
        (out, indices), (tout, tindices) = (
            getattr(x, name)(dim, keepdim=keepdim),
            getattr(tx, name)(dim, keepdim=keepdim),
        )
        np.testing.assert_array_equal(indices.numpy(), tindices.numpy())
        assert indices.dtype is numdiff.int64
    assert_close(out, tout, dtype)
    grad = upstream(data.draw, out.shape, dtype)
    out.backward(numdiff.tensor(grad))
    tout.backward(torch.tensor(grad))
    assert_close(x.grad, tx.grad, dtype)


@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "amax", "amin"])
def test_empty_dim_list_reduces_every_dim_like_torch(name):
    data = np.arange(6.0).reshape(2, 3)
    ours = getattr(numdiff.tensor(data), name)(dim=())
    theirs = getattr(torch.tensor(data), name)(dim=())
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(data=st.data())
def test_argmax_argmin_match_torch(name, data):
    shape = data.draw(shapes(min_dims=1), label="shape")
    array = data.draw(values(np.float64, shape, unique=True), label="x")
    dim = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    ours = getattr(numdiff.tensor(array), name)(dim, keepdim=keepdim)
    theirs = getattr(torch.tensor(array), name)(dim, keepdim=keepdim)
    assert ours.dtype is numdiff.int64
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_sum_of_bool_and_int32_counts_in_int64_like_torch():
    for dtype in ("bool", "int32"):
        ours = numdiff.tensor([1, 0, 1], dtype=getattr(numdiff, dtype)).sum()
        theirs = torch.tensor([1, 0, 1], dtype=getattr(torch, dtype)).sum()
        assert repr(ours) == repr(theirs)


def test_std_of_a_constant_group_has_zero_gradient_like_torch():
    data = np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]])
    x = numdiff.tensor(data, requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    x.std(1).sum().backward()
    tx.std(1).sum().backward()
    assert_close(x.grad, tx.grad, np.float64)
    assert gradcheck_ok(lambda t: t.std(1), data[1:])


def gradcheck_ok(fn, data) -> bool:
    return numdiff.autograd.gradcheck(
        fn, (numdiff.tensor(data, requires_grad=True),)
    ) and numdiff.autograd.gradgradcheck(fn, (numdiff.tensor(data, requires_grad=True),))


def test_prod_gradient_does_not_underflow_in_grad_times_output():
    data = np.array([1e-45, 3.0], dtype=np.float32)  # a subnormal float32
    x = numdiff.tensor(data, requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    x.prod(0).backward(numdiff.tensor(0.5, dtype=numdiff.float32))
    tx.prod(0).backward(torch.tensor(0.5))
    assert_close(x.grad, tx.grad, np.float32)


@pytest.mark.parametrize("name", ["amax", "amin", "max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("shape, dim", [((0, 5), 1), ((0, 5), -1), ((3, 0), 0), ((2, 0, 3), 2)])
def test_extremes_over_a_nonempty_dim_of_an_empty_tensor_give_an_empty_result_like_torch(name, shape, dim):
    # Only the reduced dim needs elements; numdiff refused any input with a zero anywhere.
    x = numdiff.zeros(shape, dtype=numdiff.float64, requires_grad=name not in ("argmax", "argmin"))
    out = getattr(numdiff, name)(x, dim)
    expected = getattr(torch, name)(torch.zeros(shape, dtype=torch.float64), dim)
    for ours, theirs in zip(out if isinstance(out, tuple) else (out,), expected if isinstance(expected, tuple) else (expected,)):
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype == getattr(numdiff, str(theirs.dtype).split(".")[1])
    if x.requires_grad:
        (out[0] if isinstance(out, tuple) else out).sum().backward()
        assert x.grad.shape == x.shape


@pytest.mark.parametrize("name", ["amax", "amin", "max", "min", "argmax", "argmin"])
def test_extremes_over_an_empty_dim_raise_naming_the_dim(name):
    with pytest.raises(RuntimeError, match=rf"{name}: cannot reduce over dim 0, which has size 0 \(input shape \(0, 5\)\)"):
        getattr(numdiff, name)(numdiff.zeros(0, 5), 0)
    with pytest.raises(RuntimeError, match="has size 0|empty tensor"):
        getattr(numdiff, name)(numdiff.zeros(0, 5))


@pytest.mark.parametrize("name", ["logsumexp", "std", "var", "std_mean"])
@pytest.mark.parametrize("shape, dim", [((0, 5), 0), ((0, 5), 1), ((3, 0), 1), ((3, 0), None), ((0, 5), (0, 1))])
def test_logsumexp_and_std_of_empty_tensors_match_torch(name, shape, dim):
    # They shift or scale by amax, which has no identity: any empty input raised from inside amax.
    if name == "logsumexp" and dim is None:
        return
    x = numdiff.zeros(shape, dtype=numdiff.float64, requires_grad=True)
    t_x = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    out = getattr(numdiff, name)(x, dim) if name == "logsumexp" else getattr(numdiff, name)(x, dim=dim)
    expected = getattr(torch, name)(t_x, _torch_dim(dim)) if name == "logsumexp" else getattr(torch, name)(t_x, dim=_torch_dim(dim))
    out, expected = (out[0], expected[0]) if name == "std_mean" else (out, expected)
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    out.sum().backward()
    assert x.grad.shape == x.shape


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("shape, dim", [((0, 5), None), ((0, 5), 0), ((0, 5), 1), ((3, 0), 1), ((3, 0), 0)])
def test_prod_of_an_empty_tensor_has_an_empty_gradient_like_torch(shape, dim, create_graph):
    # Its backward reshaped the reduction groups with -1, which NumPy cannot infer for 0 elements.
    x = numdiff.zeros(shape, dtype=numdiff.float64, requires_grad=True)
    t_x = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    out = numdiff.prod(x) if dim is None else numdiff.prod(x, dim)
    expected = torch.prod(t_x) if dim is None else torch.prod(t_x, dim)
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    (grad,) = numdiff.autograd.grad(out.sum(), x, create_graph=create_graph)
    (t_grad,) = torch.autograd.grad(expected.sum(), t_x)
    np.testing.assert_array_equal(grad.detach().numpy(), t_grad.numpy())


@pytest.mark.parametrize("name", ["max", "min", "amax", "amin"])
def test_whole_tensor_extreme_with_nan_has_torchs_gradient(name):
    # max() and min() of a tensor holding NaN shared the gradient among no element (0 / 0), so
    # every element got NaN; PyTorch shares it among the NaNs. amax/amin keep PyTorch's NaNs.
    x = np.array([[1.0, np.nan, 3.0], [np.nan, -np.inf, 2.0]])
    ours = numdiff.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    getattr(numdiff, name)(ours).backward()
    getattr(torch, name)(theirs).backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    (grad,) = numdiff.autograd.grad(getattr(numdiff, name)(ours), ours, create_graph=True)
    np.testing.assert_array_equal(grad.detach().numpy(), theirs.grad.numpy())


@pytest.mark.parametrize("name", ["sum", "prod", "nansum", "trace"])
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
def test_sum_and_prod_of_every_integer_dtype_give_int64_like_torch(name, dtype):
    # uint8 raised "numdiff does not support NumPy dtype uint64" (NumPy's accumulator type).
    if (name, dtype) == ("trace", "bool"):
        return  # torch has no bool trace
    values = [[200, 100], [3, 1]] if dtype != "bool" else [[1, 1], [0, 1]]
    ours = getattr(numdiff, name)(numdiff.tensor(values).to(getattr(numdiff, dtype)))
    theirs = getattr(torch, name)(torch.tensor(values).to(getattr(torch, dtype)))
    assert ours.dtype == numdiff.int64 and ours.item() == theirs.item()


@pytest.mark.parametrize("values", [[0.0, 3.3e-39], [1e-40, -2e-40, 5e-41]])
def test_std_of_subnormal_float32_spread_has_a_finite_gradient(values):
    # The deviations are rescaled before squaring; the rescaling's reciprocal once overflowed
    # float32 (1 / 1.6e-39) and turned the gradient into NaN. It matches the float64 gradient
    # (PyTorch's float32 one is finite for the first set, and inf for the second).
    ours = numdiff.tensor(values, requires_grad=True)
    ours.std(correction=0).backward()
    exact = torch.tensor(values, dtype=torch.float32).double().requires_grad_()
    exact.std(unbiased=False).backward()
    np.testing.assert_allclose(ours.grad.numpy(), exact.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("dim", [None, (0, 1), 1])
def test_sum_of_host_arrays_is_numpys_sum_bit_for_bit(dtype, dim):
    # Sum's forward reduces host arrays with np.add.reduce (np.sum without its wrapper): the same
    # values to the bit, non-contiguous layouts included, and int64 for the smaller integers.
    rng = np.random.default_rng(5)
    array = (rng.standard_normal((7, 33, 5)) * 50).astype(dtype)[:, ::2]
    got = numdiff.tensor(array).sum(dim)
    expected = np.sum(array.astype(np.int64) if array.dtype.kind in "bi" else array, axis=dim)
    assert got.dtype == numdiff.tensor(expected).dtype
    np.testing.assert_array_equal(got.numpy(), expected)
    if array.dtype.kind == "f":
        np.testing.assert_array_equal(numdiff.tensor(array).mean(dim).numpy(), (expected / (array.size // np.asarray(expected).size)).astype(dtype))
