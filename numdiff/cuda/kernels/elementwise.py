"""Elementwise CUDA kernels: one grid-stride map kernel per scalar function and arity.

Each kernel runs ``for i in range(n)`` over the C-order positions of the broadcast output shape,
split across all threads of the grid (``i = grid(1); i += gridsize(1)``). Inputs and output are
read and written through their own `meta` (offset and strides in elements, 0 where broadcast), so
broadcasting, transposed and sliced operands need no copy. Dtype conversion happens on the store.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import cuda

from numdiff._ground.scalar_expressions import ScalarRule, math_functions_in
from numdiff.cuda.kernels import _scalar_math
from numdiff.cuda.kernels._index import grid_1d, strided_offset
from numdiff.kernels._codegen import backward_reads, load_source, scalar_code, vjp_expressions


def _device(fn: Callable) -> Callable:
    return cuda.jit(device=True)(fn)


@_device
def _sign(a):
    if a > 0:
        return a - a + 1
    if a < 0:
        return a - a - 1
    return a  # 0 stays 0, NaN stays NaN


@_device
def _maximum(a, b):
    return a if (a > b or a != a) else b  # NaN propagates, as np.maximum


@_device
def _minimum(a, b):
    return a if (a < b or a != a) else b


@_device
def _logaddexp(a, b):
    larger = a if a > b else b
    if larger == -math.inf:
        return larger
    return larger + math.log1p(math.exp(-abs(a - b)))


@_device
def _trunc(a):
    return a - math.fmod(a, 1.0) if math.isfinite(a) else a


@_device
def _fmod(a, b):
    # C's fmod; a zero divisor or an infinite dividend gives NaN (the simulator's math.fmod would
    # raise). Integer operands reach here only with non-zero divisors (numdiff.ops.arithmetic checks).
    if b == 0 or a - a != 0 or b != b:
        return (a - a) * math.nan
    return math.fmod(a, b)


@_device
def _where(condition, a, b):
    return a if condition else b


# name -> (arity, scalar function). Names are NumPy's ufunc names (plus "copy" and "where").
SCALAR_FUNCTIONS: dict[str, tuple[int, Callable]] = {
    "copy": (1, _device(lambda a: a)),
    "negative": (1, _device(lambda a: -a)),
    "absolute": (1, _device(lambda a: abs(a))),
    "sign": (1, _sign),
    "exp": (1, _scalar_math.exp),
    "expm1": (1, _scalar_math.expm1),
    "log": (1, _scalar_math.log),
    "log1p": (1, _scalar_math.log1p),
    "sqrt": (1, _scalar_math.sqrt),
    "sin": (1, _scalar_math.sin),
    "cos": (1, _scalar_math.cos),
    "tanh": (1, _device(lambda a: math.tanh(a))),
    "trunc": (1, _trunc),
    "isfinite": (1, _device(lambda a: math.isfinite(a))),
    "isnan": (1, _device(lambda a: math.isnan(a))),
    "isinf": (1, _device(lambda a: math.isinf(a))),
    "logical_not": (1, _device(lambda a: not a)),
    "invert": (1, _device(lambda a: ~a)),
    "add": (2, _device(lambda a, b: a + b)),
    "subtract": (2, _device(lambda a, b: a - b)),
    "multiply": (2, _device(lambda a, b: a * b)),
    "divide": (2, _device(lambda a, b: a / b)),
    "floor_divide": (2, _device(lambda a, b: a // b)),
    "fmod": (2, _fmod),
    "power": (2, _device(lambda a, b: a**b)),
    "maximum": (2, _maximum),
    "minimum": (2, _minimum),
    "logaddexp": (2, _logaddexp),
    "equal": (2, _device(lambda a, b: a == b)),
    "not_equal": (2, _device(lambda a, b: a != b)),
    "less": (2, _device(lambda a, b: a < b)),
    "less_equal": (2, _device(lambda a, b: a <= b)),
    "greater": (2, _device(lambda a, b: a > b)),
    "greater_equal": (2, _device(lambda a, b: a >= b)),
    "bitwise_and": (2, _device(lambda a, b: a & b)),
    "bitwise_or": (2, _device(lambda a, b: a | b)),
    "bitwise_xor": (2, _device(lambda a, b: a ^ b)),
    "where": (3, _where),
}


def _unary_kernel(fn: Callable):
    @cuda.jit
    def map1(out, out_meta, a, a_meta, shape, n):
        """out[i] = fn(a[i]) for i in range(n), grid-stride over the broadcast shape."""
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            out[strided_offset(i, shape, out_meta)] = fn(a[strided_offset(i, shape, a_meta)])

    return map1


def _binary_kernel(fn: Callable):
    @cuda.jit
    def map2(out, out_meta, a, a_meta, b, b_meta, shape, n):
        """out[i] = fn(a[i], b[i]) for i in range(n), grid-stride over the broadcast shape."""
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            x = a[strided_offset(i, shape, a_meta)]
            y = b[strided_offset(i, shape, b_meta)]
            out[strided_offset(i, shape, out_meta)] = fn(x, y)

    return map2


def _ternary_kernel(fn: Callable):
    @cuda.jit
    def map3(out, out_meta, a, a_meta, b, b_meta, c, c_meta, shape, n):
        """out[i] = fn(a[i], b[i], c[i]) for i in range(n), grid-stride over the broadcast shape."""
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            x = a[strided_offset(i, shape, a_meta)]
            y = b[strided_offset(i, shape, b_meta)]
            z = c[strided_offset(i, shape, c_meta)]
            out[strided_offset(i, shape, out_meta)] = fn(x, y, z)

    return map3


_FACTORIES = {1: _unary_kernel, 2: _binary_kernel, 3: _ternary_kernel}
_KERNELS: dict[str, Callable] = {}


def launch_map(name: str, out, inputs: tuple) -> None:
    """Write ``fn(*inputs)`` into the CudaArray `out`; inputs are CudaArrays that broadcast to it.

    The caller has checked shapes, dtypes and devices. Grid: 1-D, up to 256 threads a block.
    """
    arity, fn = SCALAR_FUNCTIONS[name]
    if len(inputs) != arity:
        raise TypeError(f"{name} takes {arity} array arguments, got {len(inputs)}")
    n = out.size
    if n == 0:
        return
    kernel = _KERNELS.get(name)
    if kernel is None:
        kernel = _KERNELS[name] = _FACTORIES[arity](fn)
    shape = out.shape_vector()
    args = [out._buffer, out.meta(out.shape)]
    for x in inputs:
        args += [x._buffer, x.meta(out.shape)]
    blocks, threads = grid_1d(n)
    kernel[blocks, threads](*args, shape, n)


# ----------------------------------------------------------------- kernels generated from the rules
# (rule, kind, needed inputs) -> the @cuda.jit kernel; see numdiff/_ground/scalar_rules.py.
RULE_KERNELS: dict[tuple, Callable] = {}


def _rule_source(results: list[str], expressions: list[str], operands: tuple[str, ...], attrs: tuple[str, ...]) -> str:
    """``kernel(r_0, r_0_meta, ..., a_x, a_x_meta, ..., shape, n, <attrs>)``: a grid-stride map."""
    functions = sorted(set().union(*(math_functions_in(e) for e in expressions)))
    imports = [
        f"from numdiff.cuda.kernels._scalar_math import {f} as m_{f}"
        if hasattr(_scalar_math, f)
        else f"from math import {f} as m_{f}"
        for f in functions
    ]
    params = [p for r in results for p in (r, f"{r}_meta")] + [p for o in operands for p in (f"a_{o}", f"a_{o}_meta")]
    reads = {o: f"v_{o}" for o in operands}
    lines = [
        "import math",
        "",
        "from numba import cuda",
        "",
        "from numdiff.cuda.kernels._index import strided_offset",
        *imports,
        "",
        "",
        "@cuda.jit(cache=True)",
        f"def kernel({', '.join([*params, 'shape', 'n', *attrs])}):",
        "    for i in range(cuda.grid(1), n, cuda.gridsize(1)):",
        *[f"        v_{o} = a_{o}[strided_offset(i, shape, a_{o}_meta)]" for o in operands],
        *[
            f"        {r}[strided_offset(i, shape, {r}_meta)] = {scalar_code(e, reads, 'm_')}"
            for r, e in zip(results, expressions)
        ],
    ]
    return "\n".join(lines) + "\n"


def _rule_kernel(rule: ScalarRule, kind: str, needed: tuple[int, ...]) -> Callable:
    key = (rule.name, kind, needed)
    kernel = RULE_KERNELS.get(key)
    if kernel is None:
        if kind == "forward":
            results, expressions, operands = ["r_0"], [rule.forward], rule.inputs
        else:
            expressions = vjp_expressions(rule, needed)
            results = [f"r_{i}" for i in range(len(needed))]
            operands = backward_reads(rule, needed)
        source = _rule_source(results, expressions, operands, rule.attr_names)
        kernel = RULE_KERNELS[key] = load_source(f"cuda_{rule.name}_{kind}{''.join(map(str, needed))}", source).kernel
    return kernel


def _launch_rule(kernel: Callable, results: list, operands: list, attrs: tuple) -> None:
    out = results[0]
    n = out.size
    if n == 0:
        return
    dtype = out.dtype
    args = []
    for r in results:
        args += [r._buffer, r.meta(out.shape)]
    for value in operands:
        if not hasattr(value, "_buffer"):  # a Python number joins as a 0-d array of the result dtype
            value = out.from_host(np.asarray(value, dtype=dtype))
        args += [value._buffer, value.meta(out.shape)]
    blocks, threads = grid_1d(n)
    kernel[blocks, threads](*args, out.shape_vector(), n, *attrs)


def rule_forward(rule: ScalarRule, inputs: tuple, attrs: tuple, shape: tuple, dtype, like) -> object:
    """``rule.forward`` over CudaArrays (and Python numbers) broadcast to `shape`, in `dtype`."""
    out = type(like).empty(shape, dtype, like.device)
    _launch_rule(_rule_kernel(rule, "forward", ()), [out], list(inputs), attrs)
    return out


def rule_backward(rule: ScalarRule, needed: tuple[int, ...], values: dict, attrs: tuple) -> list:
    """The gradients of the inputs in `needed` (output-shaped CudaArrays), from one kernel launch."""
    g = values["g"]
    results = [type(g).empty(g.shape, g.dtype, g.device) for _ in needed]
    operands = [values[name] for name in backward_reads(rule, needed)]
    _launch_rule(_rule_kernel(rule, "backward", needed), results, operands, attrs)
    return results
