"""The scalar rule table (numdiff/_ground/scalar_rules.py) and what is generated from it.

- NaN and inf semantics against torch 2.13, on both backward paths (the fused kernel, and the
  tensor form recorded under create_graph);
- the generated CPU loops on every layout they choose between (contiguous, strided, broadcast,
  scalar, stride-0, above the parallel grain), against NumPy;
- that a rule is the whole definition of an op (registered Function, public function, method);
- that recorded nodes carry op_name and attrs that replay the forward.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf
from numdiff._ground.scalar_expressions import ScalarRule, check_rules, vjp_expression
from numdiff._ground.scalar_rules import RULES
from numdiff.autograd.function import _Unrecorded
from numdiff.kernels import _codegen, _kernel_files
from numdiff.kernels import elementwise as cpu_kernels
from numdiff.ops import OPS
from numdiff.ops.elementwise import FUNCTIONS, PUBLIC

torch = pytest.importorskip("torch")
tnf = torch.nn.functional

NAN, INF = float("nan"), float("inf")

# name: (numdiff function, torch function) for one tensor input.
UNARY_NAN = {
    "relu": (numdiff.relu, torch.relu),
    "leaky_relu": (lambda x: nf.leaky_relu(x, 0.1), lambda x: tnf.leaky_relu(x, 0.1)),
    "elu": (nf.elu, tnf.elu),
    "abs": (numdiff.abs, torch.abs),
    "softplus": (nf.softplus, tnf.softplus),
    "sigmoid": (numdiff.sigmoid, torch.sigmoid),
    "gelu": (nf.gelu, tnf.gelu),
}
UNARY_NAN |= {
    "silu": (nf.silu, tnf.silu), "mish": (nf.mish, tnf.mish), "hardswish": (nf.hardswish, tnf.hardswish),
    "hardsigmoid": (nf.hardsigmoid, tnf.hardsigmoid), "hardtanh": (nf.hardtanh, tnf.hardtanh),
    "relu6": (nf.relu6, tnf.relu6), "logsigmoid": (nf.logsigmoid, tnf.logsigmoid), "selu": (nf.selu, tnf.selu),
    "celu": (lambda x: nf.celu(x, 0.7), lambda x: tnf.celu(x, 0.7)), "softsign": (nf.softsign, tnf.softsign),
    "softshrink": (nf.softshrink, tnf.softshrink), "hardshrink": (nf.hardshrink, tnf.hardshrink),
    "tanhshrink": (nf.tanhshrink, tnf.tanhshrink),
    "threshold": (lambda x: nf.threshold(x, 0.4, -2.0), lambda x: tnf.threshold(x, 0.4, -2.0)),
}  # fmt: skip
# PyTorch's own gradient of these at NaN depends on where the element falls (its vectorised loop
# body or the scalar tail): a finite value or NaN. numdiff gives NaN; the NaN input is left out.
# torch's gradient at a NaN input depends on which loop it lands in: elu's is 1 in the scalar tail of its
# vectorised loop and NaN in an AVX2 lane (measured on this Haswell machine), so it is not pinned.
NAN_GRADIENT_VARIES = {"hardswish", "selu", "celu", "hardtanh", "relu6", "softshrink", "hardshrink", "elu"}
# The functions with a restricted domain or a pole: values at and beyond its edges too.
UNARY_NAN |= {
    name: (getattr(numdiff, name), getattr(torch, name))
    for name in ("tan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2",
                 "square", "reciprocal")
}  # fmt: skip


def _grads(fn, x, grad, create_graph: bool):
    """The gradient of fn at x for the output gradient `grad`, through either backward path."""
    leaf = numdiff.tensor(x, requires_grad=True)
    out = fn(leaf)
    (g,) = numdiff.autograd.grad(out, leaf, numdiff.tensor(grad), create_graph=create_graph)
    return out.detach().numpy(), g.detach().numpy()


def _torch_grads(fn, x, grad):
    leaf = torch.tensor(x, requires_grad=True)
    out = fn(leaf)
    (g,) = torch.autograd.grad(out, leaf, torch.tensor(grad))
    return out.detach().numpy(), g.numpy()


@pytest.mark.parametrize("create_graph", [False, True], ids=["kernel", "tensor-form"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(UNARY_NAN))
def test_nan_and_inf_inputs_give_torchs_values_and_gradients(name, dtype, create_graph):
    ours, theirs = UNARY_NAN[name]
    x = np.array([NAN, -INF, INF, -2.0, -1.0, -0.0, 0.0, 0.5, 1.0, 30.0, 800.0], dtype=dtype)
    if name == "gelu":  # torch's float32 gelu gives NaN at +inf and its float64 one inf: skip infinities
        x = x[np.isfinite(x) | np.isnan(x)]
    if name in NAN_GRADIENT_VARIES:
        x = x[~np.isnan(x)]
    grad = np.ones_like(x)
    out, g = _grads(ours, x, grad, create_graph)
    t_out, t_g = _torch_grads(theirs, x, grad)
    # torch's AVX2 float32 gelu evaluates erf to about 4e-6 relative (gelu(-2): -0.0455001 against the
    # exact -0.04550026, which numdiff gives): compare float32 gelu to that accuracy.
    value_rtol = 1e-5 if name == "gelu" and dtype == np.float32 else 1e-6
    np.testing.assert_allclose(out, t_out, rtol=value_rtol, equal_nan=True)
    # PyTorch's float32 softsign gradient, 1 / (1 + |x|) - |x| / (1 + |x|) ** 2, loses digits to
    # cancellation at large |x| (2e-5 at 800); numdiff's 1 / (1 + |x|) ** 2 does not.
    rtol = 3e-5 if name == "softsign" and dtype == np.float32 else value_rtol
    np.testing.assert_allclose(g, t_g, rtol=rtol, equal_nan=True)


@pytest.mark.parametrize("create_graph", [False, True], ids=["kernel", "tensor-form"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["atan2", "hypot", "logaddexp", "xlogy"])
def test_two_input_functions_give_torchs_values_and_gradients_on_every_pair_of_specials(name, dtype, create_graph):
    specials = [NAN, -INF, INF, -2.0, -0.0, 0.0, 0.5, 3.0]
    x = np.array([a for a in specials for _ in specials], dtype=dtype)
    y = np.array([b for _ in specials for b in specials], dtype=dtype)
    lx, ly = numdiff.tensor(x, requires_grad=True), numdiff.tensor(y, requires_grad=True)
    out = getattr(numdiff, name)(lx, ly)
    grads = numdiff.autograd.grad(out, (lx, ly), numdiff.ones_like(out), create_graph=create_graph)
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    t_out = getattr(torch, name)(tx, ty)
    t_grads = torch.autograd.grad(t_out, (tx, ty), torch.ones_like(t_out))
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol=2e-6, equal_nan=True)
    for g, t_g in zip(grads, t_grads):
        np.testing.assert_allclose(g.detach().numpy(), t_g.numpy(), rtol=2e-6, equal_nan=True)


def test_activations_refuse_bad_arguments_naming_the_op():
    with pytest.raises(ValueError, match=r"hardtanh: min_val \(2.0\) cannot be greater than max_val \(1.0\)"):
        nf.hardtanh(numdiff.ones(2), 2.0, 1.0)
    with pytest.raises(ValueError, match="softshrink: lambd must be at least 0, got -1"):
        nf.softshrink(numdiff.ones(2), -1)
    with pytest.raises(ValueError, match="celu: alpha must be non-zero"):
        nf.celu(numdiff.ones(2), 0.0)
    with pytest.raises(TypeError, match="silu: expected a floating point tensor"):
        nf.silu(numdiff.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"glu: halving dimension -1 must be even, but it has size 3 \(shape \(2, 3\)\)"):
        nf.glu(numdiff.ones(2, 3))


def test_activation_modules_match_torch_and_work_in_place():
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32) * 4
    for name, arguments in [
        ("SiLU", ()), ("Mish", ()), ("Hardswish", ()), ("Hardsigmoid", ()), ("Hardtanh", (-2.0, 2.0)), ("ReLU6", ()),
        ("LogSigmoid", ()), ("SELU", ()), ("CELU", (0.5,)), ("Softsign", ()), ("Softshrink", (1.0,)),
        ("Hardshrink", (1.0,)), ("Tanhshrink", ()), ("Threshold", (0.1, 20.0)), ("GLU", ()), ("Softmin", (1,)),
    ]:  # fmt: skip
        ours, theirs = getattr(numdiff.nn, name)(*arguments), getattr(torch.nn, name)(*arguments)
        np.testing.assert_allclose(ours(numdiff.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(), rtol=1e-6, atol=1e-6)
        assert repr(ours) == repr(theirs)
    y = numdiff.tensor(x.copy())
    assert numdiff.nn.SiLU(inplace=True)(y) is y
    np.testing.assert_allclose(y.numpy(), tnf.silu(torch.tensor(x)).numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match="Hardtanh: unexpected keyword arguments \\['min'\\]"):
        numdiff.nn.Hardtanh(min=0.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["fmod", "remainder"])
def test_fmod_and_remainder_match_torch_to_the_bit_with_their_gradients(name, dtype):
    specials = [NAN, -INF, INF, -7.5, -2.0, -0.0, 0.0, 0.5, 3.0, 5.25]
    x = np.array([a for a in specials for _ in specials], dtype=dtype)
    y = np.array([b for _ in specials for b in specials], dtype=dtype)
    lx, ly = numdiff.tensor(x, requires_grad=True), numdiff.tensor(y, requires_grad=True)
    out = getattr(numdiff, name)(lx, ly)
    grads = numdiff.autograd.grad(out, (lx, ly), numdiff.ones_like(out))
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    t_out = getattr(torch, name)(tx, ty)
    t_grads = torch.autograd.grad(t_out, (tx, ty), torch.ones_like(t_out))
    for ours, theirs in zip([out.detach(), *grads], [t_out.detach(), *t_grads]):
        ours, theirs = ours.numpy(), theirs.numpy()
        np.testing.assert_array_equal(ours, theirs)
        finite = ~np.isnan(ours)
        np.testing.assert_array_equal(np.signbit(ours[finite]), np.signbit(theirs[finite]))  # -0.0 as torch


def test_modulo_and_floor_division_operators_match_python_and_torch():
    a = numdiff.tensor([7, -7, 5, -5])
    assert (a % 3).tolist() == [7 % 3, -7 % 3, 5 % 3, -5 % 3]
    assert (a // 2).tolist() == [7 // 2, -7 // 2, 5 // 2, -5 // 2]
    assert (a % -3).tolist() == torch.tensor([7, -7, 5, -5]).remainder(-3).tolist()
    assert (7 % numdiff.tensor([3.0, -3.0])).tolist() == [1.0, -2.0]
    assert (7.5 // numdiff.tensor([2.0, -2.0])).tolist() == [3.0, -4.0]
    assert numdiff.fmod(a, 3).tolist() == torch.fmod(torch.tensor([7, -7, 5, -5]), 3).tolist()
    b = numdiff.tensor([7.5, -7.5])
    b %= 2.0
    assert b.tolist() == [1.5, 0.5]
    with pytest.raises(ZeroDivisionError, match="remainder: integer division by zero"):
        a % numdiff.tensor([1, 0, 1, 1])
    with pytest.raises(ZeroDivisionError, match="floor_divide: integer division by zero"):
        a // 0
    with pytest.raises(ValueError, match=r"fmod: shapes \(4,\) and \(3,\) cannot be broadcast"):
        numdiff.fmod(a, numdiff.tensor([1, 2, 3]))


def test_rounding_division_of_zero_dim_tensors_gives_a_usable_zero_dim_tensor():
    # NumPy returns a scalar for 0-d operands; wrapped as it was, the result's .device (read by the
    # next op, and by fmod's backward) raised "no numdiff backend runs on arrays of type numpy.float32".
    a, b = numdiff.tensor(7.5), numdiff.tensor(2.0)
    for quotient, expected in ((a // b, 3.0), (numdiff.div(a, b, rounding_mode="trunc"), 3.0), (numdiff.tensor(7) // 2, 3)):
        assert quotient.shape == () and quotient.device.type == "cpu"
        assert (quotient + 1).item() == expected + 1
    for op in (numdiff.fmod, numdiff.remainder):
        x, y = numdiff.tensor(7.5, dtype=numdiff.float64, requires_grad=True), numdiff.tensor(2.0, dtype=numdiff.float64, requires_grad=True)
        op(x, y).backward()
        assert (x.grad.item(), y.grad.item()) == (1.0, -3.0)


def test_composed_functions_refuse_bad_arguments_naming_the_op():
    with pytest.raises(TypeError, match="lerp: weight must be a number or a Tensor, got str"):
        numdiff.lerp(numdiff.ones(2), numdiff.zeros(2), "half")
    with pytest.raises(TypeError, match="lerp: input must be a Tensor, got list"):
        numdiff.lerp([1.0], numdiff.zeros(1), 0.5)
    with pytest.raises(TypeError, match="nan_to_num: posinf must be a number or None, got str"):
        numdiff.nan_to_num(numdiff.ones(2), posinf="big")
    with pytest.raises(ValueError, match=r"hypot: shapes \(2,\) and \(3,\) cannot be broadcast"):
        numdiff.hypot(numdiff.ones(2), numdiff.ones(3))


def test_nan_to_num_and_lerp_match_torch():
    x = np.array([NAN, INF, -INF, 1.5, -2.0], np.float32)
    leaf = numdiff.tensor(x, requires_grad=True)
    t_leaf = torch.tensor(x, requires_grad=True)
    for kwargs in ({}, {"nan": 1.0, "posinf": 2.0, "neginf": -3.0}):
        out, t_out = numdiff.nan_to_num(leaf, **kwargs), torch.nan_to_num(t_leaf, **kwargs)
        np.testing.assert_array_equal(out.detach().numpy(), t_out.detach().numpy())
    (g,) = numdiff.autograd.grad(numdiff.nan_to_num(leaf).sum(), leaf)
    (t_g,) = torch.autograd.grad(torch.nan_to_num(t_leaf).sum(), t_leaf)
    np.testing.assert_array_equal(g.numpy(), t_g.numpy())  # gradient only where finite
    start, end = np.array([1.0, 2.0, -3.0], np.float32), np.array([4.0, -2.0, 5.0], np.float32)
    for weight in (0.25, 0.75, 1.0, np.array([0.1, 0.6, 1.0], np.float32)):
        ours = numdiff.lerp(numdiff.tensor(start), numdiff.tensor(end), numdiff.tensor(weight) if isinstance(weight, np.ndarray) else weight)
        theirs = torch.lerp(torch.tensor(start), torch.tensor(end), torch.tensor(weight) if isinstance(weight, np.ndarray) else weight)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())  # bit for bit: weight 1 gives end


def test_logical_and_or_xor_and_the_aliases():
    a, b = numdiff.tensor([1, 0, 2, 0]), numdiff.tensor([True, True, False, False])
    assert numdiff.logical_and(a, b).tolist() == [True, False, False, False]
    assert a.logical_or(b).tolist() == [True, True, True, False]
    assert numdiff.logical_xor(a, b).tolist() == [False, True, True, False]
    assert numdiff.true_divide(numdiff.tensor([1]), 2).tolist() == [0.5]
    assert numdiff.tensor([-1.0, 3.0]).clamp_max(0.0).tolist() == [-1.0, 0.0]
    assert numdiff.multiply is numdiff.mul and numdiff.absolute is numdiff.abs and numdiff.arctan2 is numdiff.atan2


# Ties, values just off them, signed zeros, the edges of the float32 and float64 integer ranges.
ROUNDING_INPUTS = [
    NAN, -INF, INF, -2.5, -1.5, -1.0, -0.7, -0.5, -0.49999997, -0.50000003, -0.3, -0.0, 0.0, 0.3, 0.5,
    0.49999997, 0.7, 1.5, 2.5, 3.5, 4503599627370495.5, -4503599627370495.5, 2.0**52 + 2, 1e300, -1e300,
    123456.5, 8388607.5, -8388608.5, 4194304.5, 1e-300, -1e-300,
]  # fmt: skip


def _same_bits(ours, theirs):
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))  # -0.0 where torch has it


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round", "frac"])
def test_roundings_match_torch_to_the_bit_on_every_path(name, dtype):
    x = np.array(ROUNDING_INPUTS, dtype=dtype)
    expected = getattr(torch, name)(torch.tensor(x)).numpy()
    fn = getattr(numdiff, name)
    _same_bits(fn(numdiff.tensor(x)).numpy(), expected)  # the ufunc (frac: the generated loop)
    strided = numdiff.tensor(np.stack([x, x], 1))[:, 0]
    _same_bits(fn(strided).numpy(), expected)  # the generated loop
    _same_bits(numdiff.compile(lambda t: fn(t) * 1.0)(numdiff.tensor(x)).numpy(), expected)  # fused
    leaf = numdiff.tensor(x, requires_grad=True)
    (g,) = numdiff.autograd.grad(fn(leaf), leaf, numdiff.ones_like(leaf))
    np.testing.assert_array_equal(g.numpy(), np.full_like(x, 1.0 if name == "frac" else 0.0))


def test_roundings_keep_integers_and_refuse_what_torch_refuses():
    ints = numdiff.tensor([1, -2, 3])
    for name in ("floor", "ceil", "trunc", "round"):
        out = getattr(numdiff, name)(ints)
        assert out.dtype == numdiff.int64 and out.tolist() == [1, -2, 3] and out._data is not ints._data
    with pytest.raises(TypeError, match="floor: expected a floating point tensor, got dtype numdiff.bool"):
        numdiff.floor(numdiff.tensor([True]))
    with pytest.raises(TypeError, match="frac: expected a floating point tensor, got dtype numdiff.int64"):
        numdiff.frac(ints)
    with pytest.raises(TypeError, match="round: decimals=2 needs a floating point tensor, got dtype numdiff.int64"):
        numdiff.round(ints, decimals=2)
    with pytest.raises(TypeError, match="round: decimals must be an int, got float"):
        numdiff.round(numdiff.ones(2), decimals=1.5)
    x = numdiff.tensor([125.0, 135.0, 1.2345, -2.5551])
    expected = torch.round(torch.tensor(x.numpy()), decimals=-1).numpy()
    np.testing.assert_array_equal(numdiff.round(x, decimals=-1).numpy(), expected)


def test_every_one_input_function_has_an_in_place_method():
    x = numdiff.tensor([1.5, -0.5, 4.0])
    version = x._version
    assert x.floor_() is x and x.tolist() == [1.0, -1.0, 4.0] and x._version > version
    np.testing.assert_allclose(x.abs_().log2_().numpy(), [0.0, 0.0, 2.0])


@pytest.mark.parametrize("create_graph", [False, True], ids=["kernel", "tensor-form"])
def test_relu_passes_gradient_at_nan_and_masks_nan_gradients_where_off(create_graph):
    x = np.array([NAN, -1.0, 2.0, 0.0])
    grad = np.array([1.0, NAN, 3.0, INF])
    _, g = _grads(numdiff.relu, x, grad, create_graph)
    _, t_g = _torch_grads(torch.relu, x, grad)
    np.testing.assert_array_equal(g, t_g)  # [1, 0, 3, 0]: a masked-off NaN gradient is an exact 0
    np.testing.assert_array_equal(g, [1.0, 0.0, 3.0, 0.0])


@pytest.mark.parametrize("create_graph", [False, True], ids=["kernel", "tensor-form"])
@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_and_minimum_give_a_nan_operand_the_gradient_as_torch(name, create_graph):
    a = np.array([NAN, 1.0, 2.0, NAN, 3.0, -1.0])
    b = np.array([1.0, NAN, 2.0, NAN, 1.0, 4.0])
    grad = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    na, nb = numdiff.tensor(a, requires_grad=True), numdiff.tensor(b, requires_grad=True)
    out = getattr(numdiff, name)(na, nb)
    ga, gb = numdiff.autograd.grad(out, (na, nb), numdiff.tensor(grad), create_graph=create_graph)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    t_out = getattr(torch, name)(ta, tb)
    t_ga, t_gb = torch.autograd.grad(t_out, (ta, tb), torch.tensor(grad))
    np.testing.assert_array_equal(out.detach().numpy(), t_out.detach().numpy())
    np.testing.assert_array_equal(ga.detach().numpy(), t_ga.numpy())
    np.testing.assert_array_equal(gb.detach().numpy(), t_gb.numpy())
    assert ga.numpy()[0] == 1.0 and gb.numpy()[1] == 2.0  # the NaN side takes the gradient (was 0)


@pytest.mark.parametrize("row", [[1.0, INF, 0.0], [INF, INF, 1.0], [-INF, -INF, -INF], [1.0, -INF, 0.0], [NAN, 0.0, 1.0]])
def test_log_softmax_with_infinite_logits_matches_torch(row):
    grad = np.array([[1.0, 0.5, 0.25]])
    x = numdiff.tensor(np.array([row]), requires_grad=True)
    out = numdiff.log_softmax(x, 1)
    out.backward(numdiff.tensor(grad))
    t = torch.tensor(np.array([row]), requires_grad=True)
    t_out = torch.log_softmax(t, 1)
    t_out.backward(torch.tensor(grad))
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, equal_nan=True)
    if INF in row:
        assert np.isnan(x.grad.numpy()).all()  # was finite before: PyTorch gives NaN


# ----------------------------------------------------------------------------- generated loops

LAYOUTS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.T,
    "sliced": lambda a: a[::2, ::2],
    "strided-1d": lambda a: a.reshape(-1)[::3],
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_generated_loops_match_numpy_on_every_layout(layout, dtype):
    rng = np.random.default_rng(0)
    a = LAYOUTS[layout](rng.standard_normal((6, 8)).astype(dtype))
    b = LAYOUTS[layout](rng.uniform(0.5, 2.0, (6, 8)).astype(dtype))
    for rule, reference in [("relu", lambda x, y: np.maximum(x, 0)), ("div", np.divide), ("maximum", np.maximum)]:
        inputs = (a, b)[: RULES[rule].arity]
        out = cpu_kernels.forward(RULES[rule], inputs, (), a.shape, np.dtype(dtype))
        np.testing.assert_allclose(out, reference(a, b), rtol=1e-6)
    g = LAYOUTS[layout](rng.standard_normal((6, 8)).astype(dtype))
    quotient = a / b
    ga, gb = cpu_kernels.backward(RULES["div"], (0, 1), {"g": g, "x": a, "y": b}, ())
    np.testing.assert_allclose(ga, g / b, rtol=1e-6)
    np.testing.assert_allclose(gb, -g * quotient / b, rtol=1e-6)


def test_generated_loops_broadcast_scalars_and_stride_zero_operands():
    x = np.arange(12.0).reshape(3, 4)
    row, column = np.array([1.0, -2.0, 3.0, -4.0]), np.array([[2.0], [3.0], [4.0]])
    rule = RULES["mul"]
    for other in (row, column, 2.5, np.array(2.5), np.array([[2.5]]), np.broadcast_to(np.array(2.5), (3, 4))):
        out = cpu_kernels.forward(rule, (x, other), (), (3, 4), np.dtype(np.float64))
        np.testing.assert_array_equal(out, x * other)
    g = np.broadcast_to(np.array(1.5), (3, 4))  # the gradient of a sum: one value, all strides 0
    (gx,) = cpu_kernels.backward(rule, (0,), {"g": g, "y": column}, ())
    np.testing.assert_array_equal(gx, 1.5 * np.broadcast_to(column, (3, 4)))


@pytest.mark.parametrize("shape", [(40000,), (200, 201), (2, 3, 7000)])
def test_generated_loops_above_the_parallel_grain_match_numpy(shape):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    assert x.size > cpu_kernels.GRAIN
    for view in (x, x.T):
        out = cpu_kernels.forward(RULES["relu"], (view,), (), view.shape, x.dtype)
        np.testing.assert_array_equal(out, np.maximum(view, 0))
        (g,) = cpu_kernels.backward(RULES["relu"], (0,), {"g": view, "out": out}, ())
        np.testing.assert_array_equal(g, np.where(out > 0, view, 0))



BROADCASTS = {  # (output shape, the second operand from (rng, n = the first axis), the coalesced loop's rank)
    "gate (N,C,1,1)": ((4, 6, 5, 3), lambda rng, n: rng.standard_normal((n, 6, 1, 1)), 2),
    "bias (C,1,1)": ((3, 6, 5, 4), lambda rng, n: rng.standard_normal((6, 1, 1)), 3),
    "row (W,)": ((3, 6, 5), lambda rng, n: rng.standard_normal(5), 2),
    "column with size-1 axes": ((1, 5, 1, 7), lambda rng, n: rng.standard_normal((n, 5, 1, 1)), 2),
    "alternating": ((3, 4, 5, 6), lambda rng, n: rng.standard_normal((n, 1, 5, 1)), 4),
    "five axes": ((2, 3, 2, 3, 2), lambda rng, n: rng.standard_normal((n, 1, 2, 1, 2)), 5),
    "reversed": ((6, 5), lambda rng, n: rng.standard_normal((n, 5))[::-1, ::-1], 1),
    "transposed": ((4, 5, 6), lambda rng, n: rng.standard_normal((6, 5, n)).T, 3),
}


@pytest.mark.parametrize("case", sorted(BROADCASTS))
@pytest.mark.parametrize("big", [False, True], ids=["serial", "above-grain"])
def test_broadcast_loops_coalesce_axes_and_match_numpy(case, big):
    """Broadcast operands run as a loop nest over the output's axes with size-1 axes dropped and
    axes every operand steps over alike merged (rank 1 to MAX_LOOP_RANK), or np.ndindex beyond."""
    shape, make, rank = BROADCASTS[case]
    if big:  # the same pattern over a longer first axis: the parallel variant where threads allow
        shape = (shape[0] * 2000, *shape[1:])
    rng = np.random.default_rng(3)
    x, y, g = rng.standard_normal(shape), make(rng, shape[0]), rng.standard_normal(shape)
    coalesced = cpu_kernels._coalesced_shape(shape, [np.broadcast_to(v, shape) for v in (x, y)])
    assert len(coalesced) == rank
    out = cpu_kernels.forward(RULES["mul"], (x, y), (), shape, x.dtype)
    np.testing.assert_array_equal(out, x * y)
    gx, gy = cpu_kernels.backward(RULES["mul"], (0, 1), {"g": g, "x": x, "y": y}, ())
    np.testing.assert_array_equal(gx, g * y)
    np.testing.assert_array_equal(gy, g * x)
    (gq,) = cpu_kernels.backward(RULES["div"], (1,), {"g": g, "x": x, "y": y + 3.0}, ())
    np.testing.assert_allclose(gq, -g * (x / (y + 3.0)) / (y + 3.0), rtol=1e-12)


@pytest.mark.parametrize("shape", [(25, 40), (4, 100, 101)])
def test_contiguous_backward_writes_every_needed_gradient_in_the_output_shape(shape):
    """The all-contiguous loop above SMALL (and above GRAIN for the second shape) writes each
    needed gradient into a flat buffer that comes back in the output's shape."""
    rng = np.random.default_rng(2)
    a, b, g = (rng.standard_normal(shape) for _ in range(3))
    b += np.sign(b)  # away from zero: the division's gradients stay moderate
    assert a.size > cpu_kernels.SMALL
    quotient = a / b
    ga, gb = cpu_kernels.backward(RULES["div"], (0, 1), {"g": g, "x": a, "y": b}, ())
    assert ga.shape == gb.shape == shape
    np.testing.assert_allclose(ga, g / b, rtol=1e-12)
    np.testing.assert_allclose(gb, -g * quotient / b, rtol=1e-12)
    (gy,) = cpu_kernels.backward(RULES["mul"], (1,), {"g": g, "x": a, "y": b}, ())
    assert gy.shape == shape
    np.testing.assert_array_equal(gy, g * a)


def test_generated_source_lives_in_a_file_and_a_damaged_file_is_rewritten():
    source = "VALUE = 1\n"
    module = _codegen.load_source("test_probe", source)
    path = module.__file__
    assert path.startswith(str(_codegen.generated_dir())) and open(path).read() == source
    with open(path, "w") as file:
        file.write("garbage that is not the source")
    _kernel_files._loaded.clear()
    assert _codegen.load_source("test_probe", source).VALUE == 1
    assert open(path).read() == source


# ----------------------------------------------------------------------------- the table is the op


@pytest.mark.parametrize("name", sorted(RULES))
def test_every_rule_is_a_registered_op_with_a_public_function(name):
    rule = RULES[name]
    assert OPS[name] is FUNCTIONS[name] and FUNCTIONS[name].rule is rule
    assert PUBLIC[name].__name__ == name and PUBLIC[name].__doc__
    if rule.export:  # numdiff.<name> is the generated function, or a hand-written one around the same op
        inputs = [numdiff.tensor([0.5, 2.0], requires_grad=True) for _ in rule.inputs]
        assert getattr(numdiff, name)(*inputs).grad_fn.op_name == name
    if rule.method:
        assert getattr(numdiff.Tensor, name) is PUBLIC[name]


def test_atan_is_one_line_of_the_table():
    # Everything below comes from ScalarRule("atan", 1, "math.atan(x)", ("1.0 / (1.0 + x * x)",), ...).
    x = numdiff.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    out = x.atan()
    np.testing.assert_allclose(numdiff.atan(x).detach().numpy(), np.arctan([-2.0, 0.5, 3.0]))
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / (1 + np.array([-2.0, 0.5, 3.0]) ** 2))
    assert out.grad_fn.op_name == "atan"


def test_vjp_expressions_fold_constants_and_distribute_into_where():
    assert vjp_expression(RULES["add"], 0) == "g"
    assert vjp_expression(RULES["sub"], 1) == "-g"
    assert vjp_expression(RULES["relu"], 0) == "where(out <= 0.0, 0.0, g)"
    assert vjp_expression(RULES["exp"], 0) == "g * out"


def test_a_rule_reading_an_unknown_name_is_refused():
    bad = ScalarRule("bad", 1, "x + z", ("1.0",))
    with pytest.raises(ValueError, match=r"'bad'.*unknown names \['z'\]"):
        check_rules((bad,))


def test_a_derivative_calling_a_math_function_with_no_rule_is_refused():
    bad = ScalarRule("bad", 1, "math.gamma(x)", ("math.gamma(x)",))
    with pytest.raises(ValueError, match=r"'bad'.*calls math.gamma, which is not a rule"):
        check_rules((bad,))
    check_rules(tuple(RULES.values()))  # the table itself passes


def test_generated_functions_refuse_bad_input_naming_the_op():
    with pytest.raises(TypeError, match="atan: expected a Tensor, got str"):
        numdiff.atan("x")
    with pytest.raises(TypeError, match="acosh: expected a Tensor, got list"):
        numdiff.acosh([1.0, 2.0])
    with pytest.raises(TypeError, match="reciprocal: expected a Tensor, got float"):
        numdiff.reciprocal(2.0)
    with pytest.raises(TypeError, match="leaky_relu: expected a floating point tensor"):
        nf.leaky_relu(numdiff.tensor([1, 2]))  # as PyTorch refuses; relu takes integers, as PyTorch's
    with pytest.raises(TypeError, match="leaky_relu: unexpected keyword arguments \\['slope'\\]"):
        PUBLIC["leaky_relu"](numdiff.ones(2), slope=0.1)
    with pytest.raises(TypeError, match="elu: alpha must be a number, got str"):
        PUBLIC["elu"](numdiff.ones(2), alpha="big")
    with pytest.raises(ValueError, match=r"maximum: shapes \(2,\) and \(3,\) cannot be broadcast"):
        numdiff.maximum(numdiff.ones(2), numdiff.ones(3))


# ----------------------------------------------------------------------------- replayable nodes

REPLAY = {
    "leaky_relu": lambda x: nf.leaky_relu(x, 0.2),
    "softplus": lambda x: nf.softplus(x, beta=2.0, threshold=3.0),
    "max_pool2d": lambda x: nf.max_pool2d(x, 2, stride=1, padding=1),
    "prod": lambda x: x.prod(1),
    "log_softmax": lambda x: numdiff.log_softmax(x, 1),
}


@pytest.mark.parametrize("name", sorted(REPLAY))
def test_recorded_node_replays_its_forward_from_op_name_and_attrs(name):
    x = numdiff.tensor(np.random.default_rng(2).standard_normal((1, 2, 3, 3)), requires_grad=True)
    out = REPLAY[name](x)
    node = out.grad_fn
    assert node.op_name == name
    replayed = OPS[node.op_name].forward(_Unrecorded(), x.detach().numpy(), **node.attrs)
    np.testing.assert_array_equal(np.asarray(replayed), out.detach().numpy())


def test_max_pool_indices_come_from_a_second_op_not_a_side_channel():
    x = numdiff.tensor(np.random.default_rng(3).standard_normal((1, 1, 4, 4)), requires_grad=True)
    out, indices = nf.max_pool2d(x, 2, return_indices=True)
    assert set(out.grad_fn.attrs) == {"kernel_size", "stride", "padding", "dilation", "ceil_mode"}
    t_out, t_indices = tnf.max_pool2d(torch.tensor(x.detach().numpy()), 2, return_indices=True)
    np.testing.assert_array_equal(indices.numpy(), t_indices.numpy())
    np.testing.assert_array_equal(out.detach().numpy(), t_out.numpy())


@pytest.mark.parametrize("create_graph", [False, True], ids=["kernel", "tensor-form"])
def test_prod_gradient_with_zeros_needs_no_branch_and_matches_torch(create_graph):
    values = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.5, -2.0, 4.0]])
    x = numdiff.tensor(values, requires_grad=True)
    (g,) = numdiff.autograd.grad(x.prod(1).sum(), x, create_graph=create_graph)
    t = torch.tensor(values, requires_grad=True)
    (t_g,) = torch.autograd.grad(t.prod(1).sum(), t)
    np.testing.assert_allclose(g.detach().numpy(), t_g.numpy(), rtol=1e-12)


def test_a_new_process_loads_generated_kernels_from_numbas_disk_cache():
    import subprocess
    import sys

    script = (
        "import numdiff, numdiff.jit as j\n"
        "numdiff.nn.functional.leaky_relu(numdiff.ones(3), 0.3)\n"
        "print([s.source for k in j.compiled_kernels() if 'leaky_relu_forward' in k.name for s in k.signatures])\n"
    )
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True) for _ in range(2)]
    assert "disk cache" in runs[1].stdout, (runs[0].stdout, runs[1].stdout, runs[1].stderr)


@pytest.mark.parametrize("size", [7, 700])  # NumPy's expression and the generated loop
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsigmoid_gradient_in_the_far_tails_matches_torch_without_warnings(dtype, size):
    # Its vjp was 1 / (1 + exp(x)), which overflowed (a RuntimeWarning) for large x.
    values = np.resize(np.array([-800.0, -100.0, -5.0, 0.0, 3.0, 100.0, 800.0], dtype), size)
    x = numdiff.tensor(values, requires_grad=True)
    tx = torch.tensor(values, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nf.logsigmoid(x).sum().backward()
    tnf.logsigmoid(tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=4 * np.finfo(dtype).eps, atol=0)


@pytest.mark.parametrize("name", sorted(name for name, rule in RULES.items() if rule.dtypes == "any" and rule.arity == 1))
def test_one_input_rules_on_bool_give_torchs_dtype_and_values(name):
    # sign(bool) is the bool itself and square(bool) is int64 in PyTorch (the rows' bool_result),
    # where NumPy's ufuncs have no bool loop or give int8.
    values = [True, False, True]
    try:
        theirs = getattr(torch, name)(torch.tensor(values))
    except (RuntimeError, NotImplementedError):
        pytest.skip(f"torch refuses {name} on bool")  # neg; abs (numdiff gives the bool itself)
    ours = PUBLIC[name](numdiff.tensor(values))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.tolist() == theirs.tolist()


def test_a_rule_with_an_unknown_bool_result_is_refused():
    with pytest.raises(ValueError, match="scalar rule 'bad': bool_result='float'"):
        check_rules((ScalarRule("bad", 1, "x", ("1.0",), ufunc="positive", bool_result="float"),))
    with pytest.raises(ValueError, match="scalar rule 'bad': bool_result='int64'"):
        check_rules((ScalarRule("bad", 1, "x", ("1.0",), bool_result="int64"),))
