"""Elementwise ops against torch 2.13 on Hypothesis inputs: broadcasting pairs for the binary ops,
contiguous, transposed and strided layouts, float64 and float32; forward values and gradients."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import numdiff
import numdiff.nn.functional as nf
from tests.ops.strategies import DTYPES, LAYOUTS, assert_close, leaf, shapes, upstream, values

torch = pytest.importorskip("torch")
torch.set_num_threads(1)
tnf = torch.nn.functional

# name: (numdiff function, torch function, input range)
UNARY = {
    "neg": (lambda x: -x, lambda x: -x, (-3, 3)),
    "exp": (numdiff.exp, torch.exp, (-3, 3)),
    "log": (numdiff.log, torch.log, (0.1, 3)),
    "log1p": (numdiff.log1p, torch.log1p, (-0.9, 3)),
    "expm1": (numdiff.expm1, torch.expm1, (-3, 3)),
    "sqrt": (numdiff.sqrt, torch.sqrt, (0.1, 3)),
    "rsqrt": (numdiff.rsqrt, torch.rsqrt, (0.1, 3)),
    "abs": (numdiff.abs, torch.abs, (-3, 3)),
    "sign": (numdiff.sign, torch.sign, (-3, 3)),
    "sin": (numdiff.sin, torch.sin, (-3, 3)),
    "cos": (numdiff.cos, torch.cos, (-3, 3)),
    "tanh": (numdiff.tanh, torch.tanh, (-3, 3)),
    "sigmoid": (numdiff.sigmoid, torch.sigmoid, (-8, 8)),
    "erf": (numdiff.erf, torch.erf, (-3, 3)),
    "relu": (numdiff.relu, torch.relu, (-3, 3)),
    "leaky_relu": (lambda x: nf.leaky_relu(x, 0.2), lambda x: tnf.leaky_relu(x, 0.2), (-3, 3)),
    "elu": (lambda x: nf.elu(x, 0.5), lambda x: tnf.elu(x, 0.5), (-3, 3)),
    "softplus": (
        lambda x: nf.softplus(x, beta=2.0, threshold=3.0),
        lambda x: tnf.softplus(x, beta=2.0, threshold=3.0),
        (-3, 3),
    ),
    "gelu": (nf.gelu, tnf.gelu, (-3, 3)),
    "gelu_tanh": (
        lambda x: nf.gelu(x, approximate="tanh"),
        lambda x: tnf.gelu(x, approximate="tanh"),
        (-3, 3),
    ),
    "square_by_pow": (lambda x: x**2, lambda x: x**2, (-3, 3)),
    "pow_scalar_base": (lambda x: 1.5**x, lambda x: 1.5**x, (-3, 3)),
    "scalar_affine": (lambda x: 2.5 - x * 0.5 + 1, lambda x: 2.5 - x * 0.5 + 1, (-3, 3)),
    "reciprocal_by_div": (lambda x: 2 / x, lambda x: 2 / x, (0.25, 3)),
    "clamp": (lambda x: x.clamp(-1.0, 0.5), lambda x: x.clamp(-1.0, 0.5), (-3, 3)),
}

# name: (numdiff function, torch function, range of a, range of b)
BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b, (-3, 3), (-3, 3)),
    "add_alpha": (
        lambda a, b: numdiff.add(a, b, alpha=-2),
        lambda a, b: torch.add(a, b, alpha=-2),
        (-3, 3),
        (-3, 3),
    ),
    "sub": (lambda a, b: a - b, lambda a, b: a - b, (-3, 3), (-3, 3)),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, (-3, 3), (-3, 3)),
    "div": (lambda a, b: a / b, lambda a, b: a / b, (-3, 3), (0.25, 3)),
    "pow": (lambda a, b: a**b, lambda a, b: a**b, (0.25, 3), (-2, 2)),
    "maximum": (numdiff.maximum, torch.maximum, (-2, 2), (-2, 2)),
    "minimum": (numdiff.minimum, torch.minimum, (-2, 2), (-2, 2)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
def test_unary_forward_and_gradient_match_torch(name, data):
    ours_fn, torch_fn, (low, high) = UNARY[name]
    dtype = data.draw(DTYPES, label="dtype")
    array = data.draw(values(dtype, shapes(), low, high), label="x")
    layout = data.draw(LAYOUTS, label="layout")
    x = leaf(array, layout)
    tx = torch.tensor(array, requires_grad=True)
    out, tout = ours_fn(x), torch_fn(tx)
    assert_close(out, tout, dtype)
    grad = upstream(data.draw, out.shape, dtype)
    out.backward(numdiff.tensor(grad))
    tout.backward(torch.tensor(grad))
    assert_close(x.grad, tx.grad, dtype)


def _signed(array: np.ndarray, signs: np.ndarray) -> np.ndarray:
    return np.asarray(array * np.where(signs, -1, 1).astype(array.dtype))


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary_op_broadcasts_like_torch(name, data):
    ours_fn, torch_fn, a_range, b_range = BINARY[name]
    dtype = data.draw(DTYPES, label="dtype")
    shape_a, shape_b = data.draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3), label="shapes"
    ).input_shapes
    a = data.draw(values(dtype, shape_a, *a_range), label="a")
    b = data.draw(values(dtype, shape_b, *b_range), label="b")
    if name == "div":  # the divisor's range is a magnitude
        b = _signed(b, data.draw(hnp.arrays(np.bool_, shape_b), label="signs"))
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    na = leaf(a, data.draw(LAYOUTS, label="layout a"))
    nb = leaf(b, data.draw(LAYOUTS, label="layout b"))
    out, tout = ours_fn(na, nb), torch_fn(ta, tb)
    assert_close(out, tout, dtype)
    grad = upstream(data.draw, out.shape, dtype)
    out.backward(numdiff.tensor(grad))
    tout.backward(torch.tensor(grad))
    assert_close(na.grad, ta.grad, dtype)
    assert_close(nb.grad, tb.grad, dtype)


@given(data=st.data())
def test_where_broadcasts_like_torch(data):
    dtype = data.draw(DTYPES, label="dtype")
    shapes_ = data.draw(
        hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3), label="shapes"
    ).input_shapes
    condition = data.draw(hnp.arrays(np.bool_, shapes_[0]), label="condition")
    a = data.draw(values(dtype, shapes_[1]), label="a")
    b = data.draw(values(dtype, shapes_[2]), label="b")
    na, nb = leaf(a, data.draw(LAYOUTS)), leaf(b, data.draw(LAYOUTS))
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out = numdiff.where(numdiff.tensor(condition), na, nb)
    tout = torch.where(torch.tensor(condition), ta, tb)
    assert_close(out, tout, dtype)
    grad = upstream(data.draw, out.shape, dtype)
    out.backward(numdiff.tensor(grad))
    tout.backward(torch.tensor(grad))
    assert_close(na.grad, ta.grad, dtype)
    assert_close(nb.grad, tb.grad, dtype)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "pow"])
@given(data=st.data())
def test_mixed_float_widths_promote_like_torch(name, data):
    """float32 with float64 gives float64, except that a 0-d operand never widens a dimensioned one."""
    ours_fn, torch_fn, a_range, b_range = BINARY[name]
    a_dtype, b_dtype = data.draw(st.permutations([np.float32, np.float64]), label="dtypes")
    a = data.draw(values(a_dtype, shapes(max_dims=2), *a_range), label="a")
    b = data.draw(values(b_dtype, st.sampled_from([(), (1,)]), *b_range), label="b")
    na, nb = leaf(a), leaf(b)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out, tout = ours_fn(na, nb), torch_fn(ta, tb)
    assert out.dtype.numpy == np.dtype(str(tout.dtype).removeprefix("torch."))
    out.sum().backward()
    tout.sum().backward()
    assert na.grad.dtype is na.dtype and nb.grad.dtype is nb.dtype
    assert_close(na.grad, ta.grad, np.float32)
    assert_close(nb.grad, tb.grad, np.float32)


@pytest.mark.parametrize(
    ("dimensioned", "zero_dim"),
    [
        ("float32", "float64"),
        ("int32", "int64"),
        ("int64", "float64"),
        ("int32", "float32"),
        ("bool", "int64"),
        ("bool", "float64"),
        ("float64", "int64"),
        ("float32", "bool"),
    ],
)
@pytest.mark.parametrize("op", ["add", "mul", "maximum", "where", "eq"])
def test_zero_dim_tensor_promotes_like_torch(dimensioned, zero_dim, op):
    def run(m):
        x = m.tensor([1, 0, 1], dtype=getattr(m, dimensioned))
        s = m.tensor(1, dtype=getattr(m, zero_dim))
        if op == "where":
            return m.where(m.tensor([True, False, True]), x, s), m.where(m.tensor([True, False, True]), s, x)
        fn = getattr(m, op)
        return fn(x, s), fn(s, x)

    for ours, theirs in zip(run(numdiff), run(torch)):
        assert repr(ours.dtype) == repr(theirs.dtype).replace("torch.", "numdiff."), (ours, theirs)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    "expression",
    ["x + 2", "2 - x", "x * 0.5", "x / 3", "3.0 / x", "x ** 2", "2 ** x", "-x + True", "x > 1"],
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_python_number_operand_keeps_dtype_like_torch(expression, dtype):
    ours = eval(expression, {"x": numdiff.tensor([1, 2, 3], dtype=getattr(numdiff, dtype))})
    theirs = eval(expression, {"x": torch.tensor([1, 2, 3], dtype=getattr(torch, dtype))})
    assert repr(ours.dtype) == repr(theirs.dtype).replace("torch.", "numdiff.")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("bounds", [{"min": -1.5, "max": 1.5}, {"min": 0.5}, {"max": 2.5}, {"min": -1, "max": 1}])
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "bool"])
def test_clamp_of_an_integer_tensor_by_float_bounds_promotes_like_torch(bounds, dtype):
    # The bounds were cast to the input's integer dtype: clamp(int [-3, 0, 3], -1.5, 1.5) gave
    # int64 [-1, 0, 1] where PyTorch gives float32 [-1.5, 0.0, 1.5].
    values = [-3, 0, 3] if dtype != "bool" else [True, False, True]
    ours = numdiff.clamp(numdiff.tensor(values).to(getattr(numdiff, dtype)), **bounds)
    theirs = torch.clamp(torch.tensor(values).to(getattr(torch, dtype)), **bounds)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float32"])
@pytest.mark.parametrize("value", [2.5, 7, True, "tensor"])
def test_masked_fill_keeps_the_inputs_dtype_like_torch(dtype, value):
    # The result took where()'s promoted dtype: an int tensor filled with 2.5 became float32 holding
    # 2.5, a bool one filled with 7 int64 (PyTorch casts the value: int 2, bool True), and the
    # in-place form raised that the result could not be cast back.
    values, mask = [1, 0, 3], [True, False, True]
    for lib in (numdiff, torch):
        fill = lib.tensor(2.5, dtype=lib.float64) if value == "tensor" else value
        x = lib.tensor(values).to(getattr(lib, dtype))
        out = lib.masked_fill(x, lib.tensor(mask), fill)
        x.masked_fill_(lib.tensor(mask), fill)
        if lib is numdiff:
            ours, ours_inplace = out, x
        else:
            assert str(ours.dtype).split(".")[1] == str(out.dtype).split(".")[1]
            np.testing.assert_array_equal(ours.numpy(), out.numpy())
            np.testing.assert_array_equal(ours_inplace.numpy(), x.numpy())


@pytest.mark.parametrize("bounds", ["min", "max", "both", "both-broadcast"])
def test_clamp_by_tensor_bounds_gives_the_gradient_to_the_operand_the_value_is_like_torch(bounds):
    # Composed of maximum/minimum, it halved the gradient between input and a bound it ties with
    # (input 2 clamped at min 2 got 0.5) and gave it to both where the input is NaN.
    nan = float("nan")
    x = np.array([1.0, 2.0, 3.0, nan, 1.0, 0.5, 5.0, 2.5])
    low = np.array([2.0, 2.0, 2.0, 0.0, nan, 3.0, 3.0, 2.0])
    high = np.array([2.5, 2.5, 2.5, 2.5, 2.5, 1.0, 1.0, 2.5])
    if bounds == "both-broadcast":
        x, low, high = x.reshape(2, 4), low[:4].reshape(1, 4), high[:2].reshape(2, 1)
    upstream = np.arange(1.0, x.size + 1).reshape(x.shape) ** 2
    grads = []
    for lib in (numdiff, torch):
        leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in (x, low, high)]
        t, lo, hi = leaves
        kwargs = {"min": {"min": lo}, "max": {"max": hi}}.get(bounds, {"min": lo, "max": hi})
        out = lib.clamp(t, **kwargs)
        out.backward(lib.tensor(upstream, dtype=lib.float64))
        grads.append([out.detach().numpy()] + [np.zeros(a.shape) if a.grad is None else a.grad.numpy() for a in leaves])
    for ours, theirs in zip(*grads):
        np.testing.assert_array_equal(ours, theirs)


def test_softmax_argument_errors_name_softmax():
    # They came from the log_softmax it is composed of, naming log_softmax.
    with pytest.raises(IndexError, match=r"^softmax: dimension 3 is out of range"):
        numdiff.softmax(numdiff.ones(2, 3), 3)
    with pytest.raises(TypeError, match=r"^softmax: expected a floating point tensor, got dtype numdiff.int64"):
        numdiff.ones(2, dtype=numdiff.int64).softmax(0)


def _half_ulps_apart(ours: np.ndarray, reference: np.ndarray) -> int:
    """The largest distance between two float16 arrays in units in the last place (0.0 == -0.0)."""
    bits = [a.view(np.int16).astype(np.int32) for a in (ours, reference)]
    ordered = [np.where(b < 0, -0x8000 - b, b) for b in bits]  # monotone in the value
    return int(np.abs(ordered[0] - ordered[1]).max(initial=0))


@pytest.mark.parametrize("size", [100, 1024])  # below and above the size where backward runs a kernel
@pytest.mark.parametrize("name", sorted(UNARY) + sorted(BINARY))
def test_float16_ops_compute_in_float32_and_round_once(name, size):
    # The kernels take float32/float64 only: float16 used to raise for the ops without a NumPy ufunc
    # (relu, gelu, sigmoid...) and leak Numba's NotImplementedError from backward past 256 elements.
    # The forward is within an ulp of torch's float64 result rounded to float16. The gradients are
    # compared with torch's float16 ones: both read the float16 output where the rule does (sigmoid's
    # out * (1 - out)), and torch rounds after every op of its formula (up to 7 ulps for erf).
    rng = np.random.default_rng(size)
    ours_fn, torch_fn, *ranges = UNARY[name] if name in UNARY else BINARY[name]
    arrays = [rng.uniform(low, high, size).astype(np.float16) for low, high in ranges]
    ours = [numdiff.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, tout = ours_fn(*ours), torch_fn(*theirs)
    exact = torch_fn(*[torch.tensor(a.astype(np.float64)) for a in arrays])
    assert out.dtype == numdiff.float16
    assert _half_ulps_apart(out.detach().numpy(), exact.numpy().astype(np.float16)) <= 1
    grad = rng.uniform(-1, 1, size).astype(np.float16)
    out.backward(numdiff.tensor(grad))
    tout.backward(torch.tensor(grad))
    for x, tx in zip(ours, theirs):
        assert x.grad.dtype == numdiff.float16
        np.testing.assert_allclose(x.grad.numpy().astype(np.float32), tx.grad.numpy().astype(np.float32), rtol=8e-3, atol=1e-3)
