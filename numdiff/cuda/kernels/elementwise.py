"""Elementwise CUDA kernels: one grid-stride map kernel per scalar function and arity.

Each kernel runs ``for i in range(n)`` over the C-order positions of the broadcast output shape,
split across all threads of the grid (``i = grid(1); i += gridsize(1)``). Inputs and output are
read and written through their own `meta` (offset and strides in elements, 0 where broadcast), so
broadcasting, transposed and sliced operands need no copy. Dtype conversion happens on the store.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from numba import cuda

from numdiff.cuda.kernels._index import grid_1d, strided_offset

# Above this, exp overflows float64 (and so float32 too); the GPU gives inf, Python would raise.
_EXP_OVERFLOW = 709.78


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
def _where(condition, a, b):
    return a if condition else b


# name -> (arity, scalar function). Names are NumPy's ufunc names (plus "copy", "where", "erf").
SCALAR_FUNCTIONS: dict[str, tuple[int, Callable]] = {
    "copy": (1, _device(lambda a: a)),
    "negative": (1, _device(lambda a: -a)),
    "absolute": (1, _device(lambda a: abs(a))),
    "sign": (1, _sign),
    "exp": (1, _device(lambda a: math.exp(a) if a < _EXP_OVERFLOW else math.inf)),
    "expm1": (1, _device(lambda a: math.expm1(a) if a < _EXP_OVERFLOW else math.inf)),
    "log": (1, _device(lambda a: math.log(a) if a > 0 else (-math.inf if a == 0 else math.nan))),
    "log1p": (1, _device(lambda a: math.log1p(a) if a > -1 else (-math.inf if a == -1 else math.nan))),
    "sqrt": (1, _device(lambda a: math.sqrt(a) if a >= 0 else math.nan)),
    "sin": (1, _device(lambda a: math.sin(a))),
    "cos": (1, _device(lambda a: math.cos(a))),
    "tanh": (1, _device(lambda a: math.tanh(a))),
    "erf": (1, _device(lambda a: math.erf(a))),
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
