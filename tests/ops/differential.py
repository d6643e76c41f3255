"""Differential checks of numdiff against PyTorch: one program, run by both libraries on the same
inputs, must agree in value, dtype and shape, or both raise.

A case is a function of the library module (`numdiff` or `torch`) returning tensors, tuples of
them, or Python values. `compare` runs it under both and describes the first disagreement. The
families below draw cases for the op population from a seeded generator: elementwise ops over
dtype pairs and Python scalars, reductions and scans over empty and 0-d inputs, integer
semantics, NaN ordering, in-place and out= dtypes, and gradients at kinks. tests/ops/
test_torch_differential.py asserts on them; tools/torch_differential.py prints what differs.

Where PyTorch disagrees with itself, numdiff takes one answer and the case is listed in
`DECISIONS` with the reason; those cases are skipped here.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

nan, inf = float("nan"), float("inf")
DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
_TOLERANCE = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 2e-6, "float64": 1e-12}

Case = tuple[str, Callable[[Any], Any]]

# Cases where numdiff keeps an answer other than torch's on purpose, by exact case name: where torch
# disagrees with itself, or its number is an artifact of its formula.
_POW_HALF = (
    "torch.pow(x, -0.5) with a Python exponent is rsqrt: -0.0 and -inf give -inf and nan, where pow with "
    "a tensor exponent (and IEEE pow) gives inf and 0; numdiff follows IEEE pow for both"
)
_NAN_ROW = "a NaN input's gradient: torch's formula gives 1 by way of a comparison with NaN, numdiff NaN"
DECISIONS = {
    **{f"{op}[{a},-0.5]": _POW_HALF for op in ("pow", "float_power") for a in ("float32", "float64")},
    "grad renorm[nan]": _NAN_ROW,
    "grad renorm p 0.5[nan]": _NAN_ROW,
    "grad cumprod[nan]": "torch's cumprod backward gives the last element 0 after an inf * 0; numdiff NaN",
    "grad copysign[nan]": "torch's copysign backward is result / input: NaN at an infinite input; numdiff the sign, +-1",
    "grad ldexp": "torch's ldexp backward multiplies by 2 ** other in the integer exponent's dtype, so 2 ** -1 "
    "is 0 and the gradient 0; numdiff gives 2 ** -1 = 0.5",
    "grad ldexp[nan]": "as grad ldexp",
}
# Other places where torch is inconsistent, and numdiff's choice (no case here compares them):
# - activations at a NaN input (hardtanh, relu6, hardswish, elu, selu, celu, softshrink, hardshrink):
#   torch's scalar loop (tensors under 8-16 elements) passes the gradient, its vectorized loop gives 0
#   or NaN; numdiff gives the vectorized loop's answer, which a layer's tensor gets.
# - which of equal elements topk and kthvalue return is unspecified in torch; numdiff's sort is stable.
# - hardsigmoid's gradient: torch multiplies by 1/6 rounded to float32 even in float64; numdiff exact.


def make(lib: Any, value: Any, dtype: str | None = None) -> Any:
    """A tensor of `lib` holding `value` (nested lists or a NumPy array), cast to `dtype` by name."""
    t = lib.tensor(value.tolist() if isinstance(value, np.ndarray) else value)
    return t.to(getattr(lib, dtype)) if dtype is not None else t


def _plain(x: Any) -> Any:
    """A comparable form of a result: (dtype name, shape, values) per tensor."""
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    if hasattr(x, "detach") and hasattr(x, "dtype"):
        x = x.detach()
        name = str(x.dtype).rsplit(".", 1)[-1]
        values = x.float().numpy() if name == "bfloat16" else np.array(x.numpy())
        return (name, tuple(x.shape), values)
    return ("python", type(x).__name__, x)


def outcome(lib: Any, case: Callable[[Any], Any]) -> tuple[str, Any]:
    """("ok", plain result) or ("raised", exception type name and message)."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the edge inputs warn by design (std of one element, NaN)
            return "ok", _plain(case(lib))
    except Exception as error:  # noqa: BLE001 - that it raised is the comparison, whatever the type
        return "raised", f"{type(error).__name__}: {str(error)[:200]}"


def _same(a: Any, b: Any, least: str | None = None) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        same = isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
        return same and all(_same(x, y, least) for x, y in zip(a, b))
    if a[0] == "python" or b[0] == "python":
        if a[:2] != b[:2]:
            return False
        x, y = a[2], b[2]
        return x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))
    if a[:2] != b[:2]:
        return False
    x, y = a[2], b[2]
    if x.dtype.kind in "biu":
        return bool(np.array_equal(x, y))
    tolerance = max(_TOLERANCE.get(a[0], 1e-12), _TOLERANCE.get(least, 0.0))
    finite = np.isfinite(y)
    if not np.array_equal(finite, np.isfinite(x)) or not np.array_equal(x[~finite], y[~finite], equal_nan=True):
        return False  # NaN where NaN, and each infinity with its sign
    # Rounding is relative to the array's scale: a cancellation leaves 4e-15 beside gradients of 100.
    scale = float(np.abs(y[finite]).max(initial=0.0))
    return bool(np.allclose(x[finite], y[finite], rtol=tolerance, atol=tolerance * 1e-3 * max(scale, 1.0)))


def compare(case: Callable[[Any], Any], torch: Any, numdiff: Any) -> str | None:
    """None when numdiff agrees with torch on `case`, else what differs. A case may name the least
    precise float dtype among its operands (`case.least_precise`): a float64 result computed from a
    float32 operand (ldexp's power) is compared to float32's rounding."""
    expected, got = outcome(torch, case), outcome(numdiff, case)
    if expected[0] == got[0] == "raised":
        return None
    if expected[0] != got[0]:
        return f"torch {expected[0]}: {str(expected[1])[:300]} | numdiff {got[0]}: {str(got[1])[:300]}"
    if not _same(got[1], expected[1], getattr(case, "least_precise", None)):
        return f"torch {str(expected[1])[:300]} | numdiff {str(got[1])[:300]}"
    return None


def backward_of(lib: Any, function: Callable[..., Any], *values: Any) -> list:
    """function's float64 output and the gradients of its inputs for a weighted sum of it (the
    weights 1, 2, ... tell elements apart)."""
    leaves = [make(lib, v, "float64").requires_grad_() for v in values]
    out = function(lib, *leaves)
    out = out[0] if isinstance(out, tuple) else out
    weights = lib.arange(1, out.numel() + 1, dtype=out.dtype).reshape(out.shape)
    (out * weights).sum().backward()
    return [out, *(leaf.grad for leaf in leaves)]


# The values each dtype is tried at: signs, zero, the dtype's edges, NaN and infinities.
VALUES = {
    "bool": [True, False, True, False], "uint8": [0, 1, 3, 250], "int8": [-7, 0, 3, 127],
    "int16": [-7, 0, 3, 300], "int32": [-7, 0, 3, -2], "int64": [-7, 0, 3, 5],
    "float16": [-2.5, 0.0, 1.5, nan], "bfloat16": [-2.5, 0.0, 1.5, inf], "float32": [-2.5, -0.0, 1.5, 3.0],
    "float64": [-2.5, 0.0, 1.5, -inf],
}
OTHER_VALUES = {
    "bool": [True, True, False, False], "uint8": [2, 0, 3, 7], "int8": [2, -3, 0, 5], "int16": [2, -3, 0, 5],
    "int32": [2, -3, 0, 5], "int64": [2, -3, 0, -5], "float16": [2.0, -3.0, 0.0, 0.5],
    "bfloat16": [2.0, -3.0, 0.0, 0.5], "float32": [2.0, -3.0, 0.0, nan], "float64": [2.0, -3.0, 0.0, 0.5],
}
FLOAT_EDGES = [-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, nan, inf, -inf]
SCALARS = (2, -3, 0, 2.5, True, -0.5)

BINARY = (
    "add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum", "fmax",
    "fmin", "eq", "lt", "ge", "ne", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_xor",
    "copysign", "true_divide", "xlogy", "ldexp", "bitwise_left_shift", "bitwise_right_shift", "float_power",
    "atan2", "hypot", "nextafter",
)
# Python-scalar operands: the ops PyTorch takes them in (maximum, atan2, ... want tensors there).
BINARY_WITH_SCALAR = tuple(op for op in BINARY if op not in ("maximum", "minimum", "fmax", "fmin", "logical_and",
                                                             "logical_xor", "atan2", "hypot", "nextafter", "ldexp"))
UNARY = (
    "abs", "neg", "sign", "sgn", "exp", "log", "sqrt", "rsqrt", "sin", "tanh", "sigmoid", "floor", "ceil", "round",
    "trunc", "frac", "reciprocal", "square", "isnan", "isinf", "isfinite", "signbit", "logical_not", "bitwise_not",
    "exp2", "expm1", "log1p", "log2", "erf", "erfinv", "lgamma", "digamma", "relu", "nan_to_num", "positive",
    "deg2rad", "sinc", "logit", "i0", "fix", "asin", "acosh", "atanh",
)
REDUCTIONS = (
    "sum", "prod", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "std", "var", "logsumexp", "nansum",
    "nanmean", "all", "any", "median", "nanmedian", "norm", "count_nonzero", "cumsum", "cumprod", "logcumsumexp",
    "cummax", "cummin",
)
# torch raises for these on a bool input where numdiff computes (numdiff is more permissive; no wrong number).
_PERMISSIVE_ON_BOOL = {"abs", "argmin", "argmax", "hypot", "atan2"}


def binary_cases() -> Iterator[Case]:
    """Every binary op over every dtype pair, a Python scalar, and a 0-d tensor against a 1-d one."""
    for op in BINARY:
        for a in DTYPES:
            for b in DTYPES:
                yield f"{op}[{a},{b}]", lambda lib, op=op, a=a, b=b: getattr(lib, op)(make(lib, VALUES[a], a), make(lib, OTHER_VALUES[b], b))
            yield f"{op}[0-d {a},int8]", lambda lib, op=op, a=a: getattr(lib, op)(make(lib, VALUES[a][0], a), make(lib, VALUES["int8"], "int8"))
            if op in BINARY_WITH_SCALAR:
                for s in SCALARS:
                    yield f"{op}[{a},{s!r}]", lambda lib, op=op, a=a, s=s: getattr(lib, op)(make(lib, VALUES[a], a), s)


def unary_cases() -> Iterator[Case]:
    """Every unary op over every dtype, the float edges, an empty, a 0-d and a transposed input."""
    for op in UNARY:
        for a in DTYPES:
            yield f"{op}[{a}]", lambda lib, op=op, a=a: getattr(lib, op)(make(lib, VALUES[a], a))
        yield f"{op}[edges]", lambda lib, op=op: getattr(lib, op)(make(lib, FLOAT_EDGES, "float64"))
        yield f"{op}[empty]", lambda lib, op=op: getattr(lib, op)(lib.zeros(0, 3))
        yield f"{op}[0-d]", lambda lib, op=op: getattr(lib, op)(lib.tensor(-1.5))
        yield f"{op}[transposed]", lambda lib, op=op: getattr(lib, op)(lib.arange(-6.0, 6.0).reshape(3, 4).t())


def reduction_cases() -> Iterator[Case]:
    """Every reduction and scan over dtypes, empty shapes (each dim), NaN, 0-d and negative dims."""
    for op in REDUCTIONS:
        for a in DTYPES:
            yield f"{op}[{a}]", lambda lib, op=op, a=a: getattr(lib, op)(make(lib, VALUES[a], a))
            yield f"{op}[{a},dim 0]", lambda lib, op=op, a=a: getattr(lib, op)(make(lib, [VALUES[a], OTHER_VALUES[a]], a), 0)
            yield f"{op}[{a},dim -1,keepdim]", lambda lib, op=op, a=a: getattr(lib, op)(make(lib, [VALUES[a], OTHER_VALUES[a]], a), -1, keepdim=True)
        for shape in ((0,), (0, 3), (3, 0), (2, 0, 3)):
            yield f"{op}[empty {shape}]", lambda lib, op=op, shape=shape: getattr(lib, op)(lib.zeros(shape))
            for d in range(-len(shape), len(shape)):
                yield f"{op}[empty {shape},dim {d}]", lambda lib, op=op, shape=shape, d=d: getattr(lib, op)(lib.zeros(shape), d)
        yield f"{op}[nan]", lambda lib, op=op: getattr(lib, op)(make(lib, [1.0, nan, 3.0, -inf], "float32"))
        yield f"{op}[nan,dim]", lambda lib, op=op: getattr(lib, op)(make(lib, [[1.0, nan], [3.0, -inf], [2.0, 2.0]], "float32"), 1)
        yield f"{op}[0-d,dim -1]", lambda lib, op=op: getattr(lib, op)(lib.tensor(2.5), -1)
        yield f"{op}[transposed]", lambda lib, op=op: getattr(lib, op)(lib.arange(12.0).reshape(3, 4).t(), 0)


def integer_cases() -> Iterator[Case]:
    """Integer division, remainders and shifts with negatives and zero divisors, overflow wrapping,
    reductions into a narrower dtype, and float -> int casts."""
    values, divisors = [-7, -3, -1, 0, 1, 3, 7], [2, -2, 3, -3, 1, 1, -1]
    for a in ("int8", "uint8", "int16", "int32", "int64"):
        for op in ("floor_divide", "remainder", "fmod", "div", "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "pow"):
            yield f"{op}[{a}]", lambda lib, op=op, a=a: getattr(lib, op)(make(lib, values, a), make(lib, divisors, a))
            yield f"{op}[{a},zero]", lambda lib, op=op, a=a: getattr(lib, op)(make(lib, values, a), make(lib, [0] * 7, a))
            yield f"{op}[{a},-3]", lambda lib, op=op, a=a: getattr(lib, op)(make(lib, values, a), -3)
        for shift in (0, 1, 7, 8, 31, 63, 64):
            yield f"<<[{a},{shift}]", lambda lib, a=a, s=shift: make(lib, values, a) << s
            yield f">>[{a},{shift}]", lambda lib, a=a, s=shift: make(lib, values, a) >> s
        for mode in ("floor", "trunc"):
            yield f"div {mode}[{a}]", lambda lib, a=a, m=mode: lib.div(make(lib, values, a), make(lib, divisors, a), rounding_mode=m)
        yield f"overflow mul[{a}]", lambda lib, a=a: make(lib, [100, -100, 127], a) * make(lib, [100, 3, 2], a)
        for op in ("sum", "prod", "cumsum", "cumprod"):
            yield f"{op}(dtype=int8)[{a}]", lambda lib, a=a, op=op: getattr(make(lib, [100, 100, 127], a), op)(*(() if op in ("sum", "prod") else (0,)), dtype=lib.int8)
        yield f"int ** -1[{a}]", lambda lib, a=a: make(lib, [1, 2], a) ** -1
        yield f"int ** negative tensor[{a}]", lambda lib, a=a: make(lib, [1, 2, -1, 0], a) ** make(lib, [-1, -2, -3, -1], a)
        yield f"index_add(alpha=2.5)[{a}]", lambda lib, a=a: lib.zeros(3, dtype=getattr(lib, a)).index_add(0, lib.tensor([1, 1]), lib.ones(2, dtype=getattr(lib, a)), alpha=2.5)
    for a in ("int8", "uint8", "int16", "int32", "int64", "bool"):
        yield f"cast to {a}", lambda lib, a=a: make(lib, [-2.7, -0.5, 0.5, 2.7, 100.0], "float32").to(getattr(lib, a))


def ordering_cases() -> Iterator[Case]:
    """NaN and infinities through the ops that order, pick or compare, and rounding's edges."""
    x = [3.0, nan, 1.0, -inf, nan, 2.0, inf]
    ops = {
        "max": lambda lib, t: t.max(), "min": lambda lib, t: t.min(), "argmax": lambda lib, t: t.argmax(),
        "argmin": lambda lib, t: t.argmin(), "sort": lambda lib, t: t.sort(), "sort descending": lambda lib, t: t.sort(descending=True),
        "argsort stable": lambda lib, t: t.argsort(stable=True), "topk": lambda lib, t: t.topk(3), "topk smallest": lambda lib, t: t.topk(3, largest=False),
        "unique": lambda lib, t: lib.unique(t), "max dim": lambda lib, t: t.reshape(1, 7).max(1), "maximum": lambda lib, t: lib.maximum(t, t.flip(0)),
        "fmax": lambda lib, t: lib.fmax(t, t.flip(0)), "fmin": lambda lib, t: lib.fmin(t, t.flip(0)), "cummax": lambda lib, t: t.cummax(0),
        "median": lambda lib, t: t.median(), "nanmedian": lambda lib, t: t.nanmedian(), "median dim": lambda lib, t: t.reshape(1, 7).median(1),
        "kthvalue": lambda lib, t: t.kthvalue(3), "amax": lambda lib, t: t.amax(), "aminmax": lambda lib, t: lib.aminmax(t),
        "logsumexp": lambda lib, t: t.logsumexp(0), "softmax": lambda lib, t: t.softmax(0), "searchsorted": lambda lib, t: lib.searchsorted(lib.tensor([1.0, 2.0, 3.0]), t),
        "nan_to_num": lambda lib, t: lib.nan_to_num(t), "isin": lambda lib, t: lib.isin(t, lib.tensor([nan, 1.0])), "mode": lambda lib, t: lib.mode(t),
        "sign": lambda lib, t: t.sign(), "clamp nan min": lambda lib, t: t.clamp(min=nan), "clamp nan max": lambda lib, t: t.clamp(0.0, nan),
        "clamp min > max": lambda lib, t: t.clamp(2.0, 1.0),
    }
    for name, op in ops.items():
        for a in ("float32", "float64"):
            yield f"{name}[nan,{a}]", lambda lib, op=op, a=a: op(lib, make(lib, x, a))
    edges = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, 2.675, 1e16, -0.0, nan, inf]
    for a in ("float16", "bfloat16", "float32", "float64"):
        yield f"round[{a}]", lambda lib, a=a: lib.round(make(lib, edges, a))
        for d in (-2, -1, 1, 2, 3):
            yield f"round(decimals={d})[{a}]", lambda lib, a=a, d=d: lib.round(make(lib, [1.25, 2.675, 1234.5678, -0.125, 15.0, 25.0, nan], a), decimals=d)


_KINK_AT = [-1.0, -0.0, 0.0, 1.0, 2.0]
_NAN_AT = [nan, 1.0, -1.0, 0.0, inf]


def gradient_cases() -> Iterator[Case]:
    """Gradients where torch picks a subgradient or a convention: kinks, bounds, zeros of roots
    and norms, ties, masked NaN branches, and NaN inputs."""
    kinks = {
        "abs": lambda lib, x: x.abs(), "relu": lambda lib, x: lib.relu(x), "sqrt": lambda lib, x: x.sqrt(),
        "clamp(0, 1)": lambda lib, x: x.clamp(0.0, 1.0), "clamp nan bound": lambda lib, x: x.clamp(min=nan),
        "max": lambda lib, x: x.max(), "max dim": lambda lib, x: lib.max(x.reshape(1, 5), 1)[0], "amax of ties": lambda lib, x: (x * 0).amax(),
        "norm at 0": lambda lib, x: (x * 0).norm(), "norm 1 at 0": lambda lib, x: (x * 0).norm(1),
        "vector_norm 0.5": lambda lib, x: lib.linalg.vector_norm(x.reshape(5, 1) * lib.tensor([[0.0, 1.0]], dtype=x.dtype), 0.5, dim=0),
        "renorm": lambda lib, x: lib.renorm(x.reshape(5, 1), 2, 0, 1.0), "renorm p 0.5": lambda lib, x: lib.renorm(x.reshape(5, 1), 0.5, 0, 1.0),
        "pow(x, 0)": lambda lib, x: x.pow(0.0), "pow(0, x)": lambda lib, x: lib.pow(x * 0, x), "pow(x, 1.5)": lambda lib, x: x.pow(1.5),
        "where log": lambda lib, x: lib.where(x > 0, x.log(), x), "where sqrt": lambda lib, x: lib.where(x > 0, x.sqrt(), 0.0),
        "maximum tie": lambda lib, x: lib.maximum(x, x.detach().flip(0)), "fmax tie": lambda lib, x: lib.fmax(x, lib.zeros(5, dtype=x.dtype)),
        "sort": lambda lib, x: lib.sort(x.abs())[0], "median": lambda lib, x: x.abs().median(), "cummax": lambda lib, x: lib.cummax(x.abs(), 0)[0],
        "prod with zeros": lambda lib, x: x.prod(), "cumprod": lambda lib, x: x.cumprod(0), "std of one": lambda lib, x: x[:1].std(),
        "std at 0": lambda lib, x: (x * 0).std(), "dist at 0": lambda lib, x: lib.dist(x, x.detach()), "atan2(0, 0)": lambda lib, x: lib.atan2(x * 0, x * 0),
        "hypot(0, 0)": lambda lib, x: lib.hypot(x * 0, x * 0), "sign": lambda lib, x: x.sign(), "round": lambda lib, x: x.round(), "frac": lambda lib, x: x.frac(),
        "xlogy(0, x)": lambda lib, x: lib.xlogy(x * 0, x), "log_softmax of inf": lambda lib, x: lib.log_softmax(x * inf, 0),
        "leaky_relu": lambda lib, x: lib.nn.functional.leaky_relu(x, 0.1), "gelu": lambda lib, x: lib.nn.functional.gelu(x),
        "smooth_l1": lambda lib, x: lib.nn.functional.smooth_l1_loss(x, lib.zeros(5, dtype=x.dtype)), "l1": lambda lib, x: lib.nn.functional.l1_loss(x, lib.zeros(5, dtype=x.dtype)),
        "normalize at 0": lambda lib, x: lib.nn.functional.normalize(x * 0, dim=0), "cosine_similarity at 0": lambda lib, x: lib.nn.functional.cosine_similarity(x * 0, x.detach(), dim=0),
        "copysign": lambda lib, x: lib.copysign(x, x.detach().flip(0)), "ldexp": lambda lib, x: lib.ldexp(x, lib.tensor([1, 2, 3, 0, -1])),
        "nanmean": lambda lib, x: lib.where(x > 0, x, nan).nanmean(), "mish": lambda lib, x: lib.nn.functional.mish(x), "silu": lambda lib, x: lib.nn.functional.silu(x),
    }
    for name, function in kinks.items():
        yield f"grad {name}", lambda lib, f=function: backward_of(lib, f, _KINK_AT)
        yield f"grad {name}[nan]", lambda lib, f=function: backward_of(lib, f, _NAN_AT)


def inplace_cases() -> Iterator[Case]:
    """In-place ops and out= into each dtype, which torch refuses with "can't be cast" when the
    result's category is higher, and writes through views."""
    for dst in ("int32", "float16", "float32", "bool", "uint8"):
        for src in ("float64", "int64", "bool", "float32"):
            yield f"add_[{dst}<-{src}]", lambda lib, d=dst, s=src: make(lib, [1, 2, 3], d).add_(make(lib, [1, 0, 1], s))
            yield f"div_[{dst}<-{src}]", lambda lib, d=dst, s=src: make(lib, [1, 2, 3], d).div_(make(lib, [1, 2, 1], s))
            yield f"add(out=)[{dst}<-{src}]", lambda lib, d=dst, s=src: lib.add(make(lib, [1, 2, 3], s), make(lib, [1, 0, 1], s), out=make(lib, [0, 0, 0], d))
            yield f"copy_[{dst}<-{src}]", lambda lib, d=dst, s=src: make(lib, [1, 2, 3], d).copy_(make(lib, [1.5, 0, -1], s))
        yield f"add_(1.5)[{dst}]", lambda lib, d=dst: make(lib, [1, 2, 3], d).add_(1.5)
        yield f"sub_(True)[{dst}]", lambda lib, d=dst: make(lib, [1, 2, 3], d).sub_(True)
        yield f"/= 2[{dst}]", lambda lib, d=dst: make(lib, [1, 2, 3], d).__itruediv__(2)
        yield f"clamp_[{dst}]", lambda lib, d=dst: make(lib, [1, 2, 3], d).clamp_(0.5, 2.5)
        yield f"sqrt_[{dst}]", lambda lib, d=dst: make(lib, [1, 2, 3], d).sqrt_()
        yield f"fill_(2.7)[{dst}]", lambda lib, d=dst: make(lib, [1, 2, 3], d).fill_(2.7)
        yield f"masked_fill_[{dst}]", lambda lib, d=dst: make(lib, [1, 2, 3], d).masked_fill_(lib.tensor([True, False, True]), 2.7)
    yield "add_ on expanded", lambda lib: lib.zeros(1, 3).expand(2, 3).add_(1)
    yield "add_ on transposed", lambda lib: (lambda b: (b.t().add_(lib.arange(6.0).reshape(3, 2)), b)[1])(lib.zeros(2, 3))
    yield "mul_ on a slice", lambda lib: (lambda b: (b[:, 1:].mul_(3), b)[1])(lib.arange(6.0).reshape(2, 3))
    yield "sub_ on a stepped slice", lambda lib: (lambda b: (b[::2].sub_(1), b)[1])(lib.arange(6.0))
    yield "fill_ on a diagonal", lambda lib: (lambda b: (b.diagonal().fill_(7), b)[1])(lib.zeros(3, 3))
    yield "add_ broadcasting up", lambda lib: lib.zeros(3).add_(lib.ones(2, 3))
    yield "out= of the wrong shape", lambda lib: lib.add(lib.ones(3), lib.ones(3), out=lib.zeros(0))
    yield "index_put_ accumulating duplicates", lambda lib: lib.zeros(4).index_put_((lib.tensor([1, 1, 3]),), lib.tensor([1.0, 2.0, 3.0]), accumulate=True)
    yield "scatter_add duplicates", lambda lib: lib.zeros(3).scatter_add(0, lib.tensor([0, 0, 2, 0]), lib.tensor([1.0, 2.0, 3.0, 4.0]))
    yield "scatter_reduce amax with nan", lambda lib: lib.zeros(3).scatter_reduce(0, lib.tensor([0, 0, 2, 0]), lib.tensor([1.0, -2.0, nan, 4.0]), "amax", include_self=False)
    yield "scatter_reduce mean of ints", lambda lib: lib.ones(3, dtype=lib.int64).scatter_reduce(0, lib.tensor([0, 0, 2, 0]), lib.tensor([1, -2, 3, 4]), "mean")
    yield "cat onto a legacy empty", lambda lib: lib.cat([lib.zeros(0, dtype=lib.int64), lib.ones(2, 3, dtype=lib.int32)])
    yield "cat of mixed dtypes", lambda lib: lib.cat([lib.zeros(2, dtype=lib.int8), lib.ones(2, dtype=lib.float16)])


FAMILIES = {
    "binary": binary_cases, "unary": unary_cases, "reduction": reduction_cases, "integer": integer_cases,
    "ordering": ordering_cases, "gradient": gradient_cases, "inplace": inplace_cases,
}


# Where one library raises and the other computes, and no number is wrong: (case name prefix, a text
# in the difference). torch raising, numdiff computing: numdiff is more permissive. numdiff raising
# with a clear message: a dtype numdiff does not support there.
_ONE_RAISES = (
    ("hypot[", "not implemented for"), ("atan2[", "not implemented for"), ("abs[bool", "not implemented for"),
    ("argmin[bool", "does not support bool"), ("argmax[bool", "does not support bool"),
    ("nextafter[", "bfloat16 is not supported"),
)


def permitted(name: str, difference: str) -> bool:
    """Whether a difference is a known one: a decision (`DECISIONS`) or one side raising (`_ONE_RAISES`)."""
    if name in DECISIONS:
        return True
    if name.startswith("#"):  # a drawn case, "#seed.i op(dtype[shape] ...)": as "op[dtype..."
        name = name.split(" ", 1)[1].replace("(", "[", 1)
    return any(name.startswith(prefix) and text in difference for prefix, text in _ONE_RAISES)
