"""CPU elementwise kernels generated from the scalar rules (numdiff/_ground/scalar_rules.py).

For each rule, `forward` writes ``out = f(x[, y])`` and `backward` writes every requested input
gradient (``g * df/dx``, ``g * df/dy``) in one pass over the broadcast output shape, so an op
costs one read of each operand and one write of each result, with no temporaries.

Kernel variants are generated on first use, one ``@njit(cache=True)`` function per variant, in a
file under numdiff.kernels._codegen.generated_dir(). A variant is chosen by:

- operand layout: an operand with the output's shape read as a flat C-contiguous (or 1-D strided)
  array ``a[i]``; a size-1 or fully broadcast operand (all strides 0, a Python number) read once as
  a scalar; anything else (broadcast along some axes, transposed, sliced in 2+ dims) makes the
  kernel a loop nest over the broadcast shape with its axes coalesced (size-1 axes dropped,
  neighbouring axes every operand steps over as one merged), reading broadcast views without
  copies: rank 1 to `MAX_LOOP_RANK` a nest of that depth, more the N-d index (``np.ndindex``);
- size: above `GRAIN` elements (and with more than one Numba thread) the loop is a ``prange``
  (over the elements, or equal runs of the N-d loop's first two axes); below it the kernel stays serial and never opens a parallel region, as PyTorch's
  grain of 32768.

Loop nest: ``for i in range(n): out[i] = expr(a_x[i], a_y)``; extra memory: none.

Transcendental functions: the loops call numdiff.kernels._vecmath's exp, log, sin, ... (polynomials
LLVM vectorises) instead of the C library's scalar ones, so a compound expression (sigmoid, a
backward's ``g * cos(x)``) is one vectorised pass. Two exceptions, by measurement:

- a forward that is one call of a NumPy ufunc (``math.exp(x)``, ``math.tanh(x)``) runs that ufunc:
  NumPy's hand-tuned SIMD versions beat the generated loop for a single function (float32[10^6],
  one thread: exp 0.45 ms against 0.52, tanh 0.31 against 1.1);
- an expression calling a function _vecmath lacks (``math.atan``, ``math.lgamma``) is evaluated as a
  NumPy expression (a few SIMD passes with temporaries) rather than a loop of scalar C calls, and
  so is a backward of at most `SMALL` elements.

On CUDA the kernels always run.
"""

from __future__ import annotations

import functools
import re

import numpy as np
from numba import get_num_threads
from numba.core.dispatcher import Dispatcher

from numdiff._ground.scalar_expressions import ScalarRule, math_functions_in
from numdiff._ground.scalar_rules import RULES
from numdiff.kernels._codegen import backward_reads, load_source, vjp_expressions
from numdiff.kernels._elementwise_source import loop_source
from numdiff.kernels._vecmath import FUNCTIONS as VECTOR_MATH

# Work below this many elements runs serially (PyTorch's grain size).
GRAIN = 32768
# A backward of at most this many elements runs as a NumPy expression: at 16 elements one ufunc
# call costs less than preparing the loop's arguments (relu's backward: equal at 16 elements, the
# loop 1.4x faster at 1024 and 13x at 16384, float32, one thread).
SMALL = 256

# (rule, kind, needed inputs, operand pattern, "flat"/"nd<rank>"/"nd", parallel) -> the compiled dispatcher.
# The generated modules are named numdiff.kernels._generated.*; numdiff.jit lists them from here.
KERNELS: dict[tuple, Dispatcher] = {}

# math functions NumPy has as SIMD ufuncs, read from the rules: each unary rule whose forward is the
# one call ``math.<name>(x)`` and that names its ufunc (exp -> np.exp, atan -> np.arctan). sqrt is
# left to the loops, where it is one instruction; erf has no ufunc (math.erf in a loop is the fastest
# there is).
NUMPY_FUNCTIONS = {
    name: getattr(np, rule.ufunc)
    for name, rule in RULES.items()
    if rule.arity == 1 and rule.ufunc and rule.forward == f"math.{name}(x)" and name != "sqrt"
}


def _by_rule(rule: ScalarRule, x: np.ndarray, *values: float) -> np.ndarray:
    """A unary rule's forward on an array (its attrs by position), in the array's dtype (float32 and
    float64 through the rule's loop)."""
    x = np.ascontiguousarray(x).reshape(np.shape(x))  # ascontiguousarray makes a 0-d array 1-d
    if x.dtype.char in "fd":
        return forward_contiguous(rule, x, values)
    return forward_contiguous(rule, x.astype(np.float64), values).astype(x.dtype)


class _NumpyMath:
    """``math`` in an expression evaluated on arrays. NumPy's functions are plain attributes (a small
    backward evaluates one such expression per op, and a __getattr__ call per use showed there); the
    functions NumPy lacks (erf, lgamma, digamma, ...) run their own rule's loop."""

    fabs = staticmethod(np.abs)
    sqrt = staticmethod(np.sqrt)

    def __getattr__(self, name: str):
        rule = RULES.get(name)
        if rule is None:  # AttributeError, so hasattr() and getattr(..., default) work on it
            raise AttributeError(f"elementwise math: no function or rule named {name!r}")
        return functools.partial(_by_rule, rule)


for _name, _function in NUMPY_FUNCTIONS.items():
    setattr(_NumpyMath, _name, staticmethod(_function))


_NUMPY_SCOPE = {"math": _NumpyMath(), "where": np.where, "__builtins__": {}}


@functools.cache
def _numpy_code(expression: str):
    """The expression compiled for NumPy when NumPy computes it faster than a loop, else None:
    one ufunc call on x, or an expression calling a function _vecmath does not vectorise."""
    functions = math_functions_in(expression)
    single_call = re.fullmatch(r"math\.(\w+)\(x\)", expression)
    scalar_only = functions - set(VECTOR_MATH) - {"fabs", "sqrt"}
    if (single_call and single_call[1] in NUMPY_FUNCTIONS) or scalar_only & set(NUMPY_FUNCTIONS):
        return compile(expression, "<scalar rule>", "eval")
    return None


def _evaluate(code, names: dict, shape: tuple, dtype: np.dtype) -> np.ndarray:
    if "where" in code.co_names:
        # Both branches of where() are computed here, so overflow in the branch not taken is expected.
        with np.errstate(all="ignore"):
            result = eval(code, _NUMPY_SCOPE, names)
    else:
        result = eval(code, _NUMPY_SCOPE, names)
    if type(result) is not np.ndarray or result.dtype != dtype:
        result = np.asarray(result, dtype=dtype)
    return result if result.shape == shape else np.array(np.broadcast_to(result, shape))


def _kernel(rule: ScalarRule, kind: str, needed: tuple[int, ...], pattern: str, layout: str, parallel: bool):
    key = (rule.name, kind, needed, pattern, layout, parallel)
    kernel = KERNELS.get(key)
    if kernel is None:
        if kind == "forward":
            results, expressions, operands = ["r_0"], [rule.forward], rule.inputs
        else:
            expressions = vjp_expressions(rule, needed)
            results = [f"r_{i}" for i in range(len(needed))]
            operands = backward_reads(rule, needed)
        source = loop_source(results, expressions, operands, pattern, rule.attr_names, layout, parallel)
        stem = f"{rule.name}_{kind}{''.join(map(str, needed))}_{pattern}_{layout}{'_par' if parallel else ''}"
        kernel = KERNELS[key] = load_source(stem, source).kernel
    return kernel


def _operands(values: list, shape: tuple[int, ...], dtype: np.dtype) -> tuple[str, list, str]:
    """(pattern, kernel arguments, layout) for operands broadcast to `shape`."""
    pattern = []
    flat = []
    for value in values:
        if type(value) is not np.ndarray:  # a Python number
            pattern.append("S")
            flat.append(dtype.type(value))
        elif value.shape == shape and (value.flags.c_contiguous or value.ndim == 1):
            pattern.append("A")
            flat.append(value.reshape(-1) if value.ndim != 1 else value)
        elif value.size == 1 or (value.shape == shape and not any(value.strides)):
            pattern.append("S")
            flat.append(value[(0,) * value.ndim] if value.ndim else value[()])
        else:
            pattern.append(None)
            flat.append(None)
    if None not in pattern:
        return "".join(pattern), flat, "flat"
    nd_pattern = "".join(p or "A" for p in pattern)
    nd = [np.broadcast_to(v, shape) if p != "S" else f for v, p, f in zip(values, pattern, flat)]
    coalesced = _coalesced_shape(shape, [v for v, p in zip(nd, nd_pattern) if p == "A"])
    if len(coalesced) > MAX_LOOP_RANK:
        return nd_pattern, nd, "nd"
    nd = [v.reshape(coalesced) if p == "A" else v for v, p in zip(nd, nd_pattern)]
    return nd_pattern, nd, f"nd{len(coalesced)}"


# Broadcast operands whose axes coalesce to at most this many run as a loop nest of that rank;
# more run the np.ndindex loop (each rank is a kernel variant of its own).
MAX_LOOP_RANK = 4


def _coalesced_shape(shape: tuple[int, ...], arrays: list[np.ndarray]) -> tuple[int, ...]:
    """`shape` with size-1 axes dropped and each pair of neighbouring axes merged where every array
    (broadcast to `shape`) steps over them as over one axis, so reshaping to it makes views: a
    (16, 96, 8, 8) gradient times a (16, 96, 1, 1) gate is a (1536, 64) loop, a bias add over
    (N, C, H, W) an (N, C, H*W) one. The results are C-contiguous and always merge."""
    axes = [(size, [a.strides[d] for a in arrays]) for d, size in enumerate(shape) if size != 1]
    if not axes:
        return (1,)
    merged = [axes[0]]
    for size, strides in axes[1:]:
        outer_size, outer = merged[-1]
        if all(o == s * size for o, s in zip(outer, strides)):
            merged[-1] = (outer_size * size, strides)
        else:
            merged.append((size, strides))
    return tuple(size for size, _ in merged)


_SINGLE = np.dtype(np.float32)


def _in_kernel_precision(attrs: tuple, dtype: np.dtype) -> tuple:
    """A rule's attrs as a float32 kernel's arguments: rounded to float32, as PyTorch's float32
    kernels take beta, threshold, negative_slope. A float64 attr would make ``x * beta`` and all that
    follows float64, and the exp after it the slow float64 one: softplus's backward on
    float32[524288], one thread, 1.75 ms -> 0.52."""
    if attrs and dtype == _SINGLE:
        return tuple(np.float32(value) for value in attrs)
    return attrs


def _launch(rule, kind, needed, results, values, shape, dtype, attrs) -> None:
    pattern, arguments, layout = _operands(values, shape, dtype)
    attrs = _in_kernel_precision(attrs, dtype)
    size = results[0].size
    if layout == "flat":
        outs = [r.reshape(-1) for r in results]
        parallel = size > GRAIN and get_num_threads() > 1
    elif layout != "nd":
        loop_shape = arguments[pattern.index("A")].shape
        outs = [r.reshape(loop_shape) for r in results]
        parts = get_num_threads()
        parallel = size > GRAIN and parts > 1 and (len(loop_shape) > 1 or loop_shape[0] > 1)
        if parallel and len(loop_shape) > 1:
            attrs = (*attrs, parts)
    else:
        outs = list(results)
        parts = get_num_threads()
        parallel = size > GRAIN and len(shape) >= 2 and parts > 1
        if parallel:
            attrs = (*attrs, parts)
    kernel = _kernel(rule, kind, needed, pattern, layout, parallel)
    kernel(*outs, *arguments, *attrs)


def forward(rule: ScalarRule, inputs: tuple, attrs: tuple, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """``rule.forward`` over `inputs` (float arrays of `dtype` and Python numbers) broadcast to `shape`.

    >>> forward(RULES["relu"], (np.array([-1.0, 2.0]),), (), (2,), np.dtype("float64"))
    array([0., 2.])
    """
    x = inputs[0]
    code = _numpy_code(rule.forward)
    if code is not None:
        names = dict(zip(rule.inputs, inputs)) | dict(zip(rule.attr_names, attrs))
        return _evaluate(code, names, shape, dtype)
    if len(inputs) == 1 and x.flags.c_contiguous:
        return forward_contiguous(rule, x, attrs)
    out = np.empty(shape, dtype)
    if out.size:
        _launch(rule, "forward", (), [out], list(inputs), shape, dtype, attrs)
    return out


def forward_contiguous(rule: ScalarRule, x: np.ndarray, attrs: tuple) -> np.ndarray:
    """`forward` of a unary rule on one C-contiguous float array: the eager hot path."""
    code = _numpy_code(rule.forward)
    if code is not None:
        return _evaluate(code, {"x": x, **dict(zip(rule.attr_names, attrs))}, x.shape, x.dtype)
    out = np.empty(x.shape, x.dtype)
    size = out.size
    if size:
        parallel = size > GRAIN and get_num_threads() > 1
        kernel = KERNELS.get((rule.name, "forward", (), "A", "flat", parallel))
        if kernel is None:
            kernel = _kernel(rule, "forward", (), "A", "flat", parallel)
        kernel(out.ravel(), x.ravel(), *_in_kernel_precision(attrs, x.dtype))  # flat views: both C-contiguous
    return out


def forward_pair(rule: ScalarRule, x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """`forward` of a two-input rule without attrs on two float arrays of one shape and dtype
    (tanh_backward's gradient and saved output: the create_graph hot path), C-contiguous ones
    straight into the flat loop; None for operands that broadcast, which need the op's checks."""
    if type(x) is not np.ndarray or type(y) is not np.ndarray or x.shape != y.shape or x.dtype != y.dtype:
        return None
    code = _numpy_code(rule.forward)
    if code is not None:
        return _evaluate(code, {"x": x, "y": y}, x.shape, x.dtype)
    if not (x.flags.c_contiguous and y.flags.c_contiguous):  # a sum's expanded gradient, a transposed one
        return forward(rule, (x, y), (), x.shape, x.dtype)
    out = np.empty(x.shape, x.dtype)
    size = out.size
    if size:
        parallel = size > GRAIN and get_num_threads() > 1
        kernel = KERNELS.get((rule.name, "forward", (), "AA", "flat", parallel))
        if kernel is None:
            kernel = _kernel(rule, "forward", (), "AA", "flat", parallel)
        kernel(out.ravel(), x.ravel(), y.ravel())  # flat views: both C-contiguous
    return out


def backward(rule: ScalarRule, needed: tuple[int, ...], values: dict, attrs: tuple) -> list[np.ndarray]:
    """The gradients of the inputs in `needed`, in the output's shape, from one pass.

    `values` maps ``g`` (the output gradient) and the saved ``x``/``y``/``out`` to arrays or numbers.

    >>> backward(RULES["mul"], (0, 1), {"g": np.ones(2), "x": np.array([2.0, 3.0]), "y": 4.0}, ())
    [array([4., 4.]), array([2., 3.])]
    """
    g = values["g"]
    size = g.size
    plan = _PLANS.get((rule.name, needed))
    if plan is None:
        plan = _PLANS[rule.name, needed] = _BackwardPlan(rule, needed)
    if plan.numpy_first or size <= SMALL:
        names = values | dict(zip(rule.attr_names, attrs)) if attrs else values
        shape, dtype = g.shape, g.dtype
        if plan.uses_where:
            return [_evaluate(code, names, shape, dtype) for code in plan.expressions]
        results = []  # _evaluate, written out for the common case (a backward per small op)
        for code in plan.expressions:
            result = eval(code, _NUMPY_SCOPE, names)
            if type(result) is not np.ndarray or result.dtype is not dtype and result.dtype != dtype:
                result = np.asarray(result, dtype=dtype)
            results.append(result if result.shape == shape else np.array(np.broadcast_to(result, shape)))
        return results
    shape = g.shape
    operands = [values[name] for name in plan.reads]
    for value in operands:
        if type(value) is not np.ndarray or value.shape != shape or not value.flags.c_contiguous:
            results = [np.empty(shape, g.dtype) for _ in needed]
            _launch(rule, "backward", needed, results, operands, shape, g.dtype, attrs)
            return results
    # Every operand contiguous in the output's shape (relu's g and out): the flat loop directly,
    # on flat views (ravel of a contiguous array) and into flat results reshaped once.
    parallel = size > GRAIN and get_num_threads() > 1
    kernel = plan.flat_kernels[parallel]
    if kernel is None:
        kernel = plan.flat_kernels[parallel] = _kernel(rule, "backward", needed, "A" * len(operands), "flat", parallel)
    attrs = _in_kernel_precision(attrs, g.dtype)
    if len(needed) == 1:
        result = np.empty(size, g.dtype)
        kernel(result, *[v.ravel() for v in operands], *attrs)
        return [result.reshape(shape)]
    results = [np.empty(size, g.dtype) for _ in needed]
    kernel(*results, *[v.ravel() for v in operands], *attrs)
    return [r.reshape(shape) for r in results]


def rule_forward(rule: ScalarRule, inputs: tuple, attrs: tuple, shape: tuple, dtype, like) -> np.ndarray:
    """`forward` under the backend's launcher name (numdiff.backend; `like` places the result on
    CUDA and is not needed on the host)."""
    return forward(rule, inputs, attrs, shape, dtype)


def rule_backward(rule: ScalarRule, needed: tuple[int, ...], values: dict, attrs: tuple) -> list[np.ndarray]:
    """`backward` under the backend's launcher name. A float16 gradient is computed in float32 and
    rounded once, as PyTorch's CPU build does (the loops take float32 and float64).

    >>> rule_backward(RULES["exp"], (0,), {"g": np.ones(1, np.float16), "out": np.ones(1, np.float16)}, ())
    [array([1.], dtype=float16)]
    """
    if values["g"].dtype == _HALF:
        wide = {name: _wide(value) for name, value in values.items()}
        return [result.astype(_HALF) for result in backward(rule, needed, wide, attrs)]
    return backward(rule, needed, values, attrs)


_HALF = np.dtype(np.float16)


def _wide(value):
    return value.astype(np.float32) if type(value) is np.ndarray and value.dtype == _HALF else value


class _BackwardPlan:
    """What a rule's backward for one set of needed inputs reads and runs, worked out once."""

    __slots__ = ("reads", "expressions", "uses_where", "numpy_first", "flat_kernels")

    def __init__(self, rule: ScalarRule, needed: tuple[int, ...]) -> None:
        expressions = vjp_expressions(rule, needed)
        self.reads = backward_reads(rule, needed)  # the operands the loop reads
        self.expressions = [compile(e, f"<vjp of {rule.name}>", "eval") for e in expressions]
        self.uses_where = any("where" in code.co_names for code in self.expressions)  # see _evaluate
        # An expression calling a NUMPY_FUNCTIONS function runs as NumPy at every size.
        self.numpy_first = any(_numpy_code(e) is not None for e in expressions)
        self.flat_kernels = [None, None]  # the all-contiguous loop: serial, parallel


# (rule name, needed inputs) -> its plan, made on first use.
_PLANS: dict[tuple[str, tuple[int, ...]], _BackwardPlan] = {}


# What numdiff.warmup compiles ahead: the rules a typical training step calls.
WARMUP_RULES = ("relu", "mul", "div", "sigmoid", "tanh")


def warm(name: str, dtype: np.dtype) -> None:
    """Compile (or load) rule `name`'s contiguous forward and all-inputs backward for `dtype`."""
    rule = RULES[name]
    inputs = tuple(np.ones(2, dtype) for _ in rule.inputs)
    attrs = tuple(default for _, default in rule.attrs)
    out = forward(rule, inputs, attrs, (2,), np.dtype(dtype))
    values = {"g": np.ones(2, dtype), "out": out, **dict(zip(rule.inputs, inputs))}
    backward(rule, tuple(range(rule.arity)), values, attrs)


__all__ = ["GRAIN", "KERNELS", "RULES", "WARMUP_RULES", "backward", "forward", "warm"]
