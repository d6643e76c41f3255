"""The recurrent kernels' gate functions, ``sigmoid`` and ``tanh``, in the argument's own precision.

numdiff.kernels._vecmath's float32 tanh (and a ``1.0 / (1.0 + exp(-x))`` written in a kernel, whose
Python float literal is a float64) finish in float64: each vector holds half the lanes and ends in a
double division. A gate loop is nothing but these functions, so here the float32 versions stay in
float32 throughout: ``sigmoid(x) = 1 / (1 + exp(-x))`` with _vecmath32's exp, and ``tanh(x) =
-e / (e + 2)`` with ``e = expm1(-2|x|)`` from the same range reduction and polynomial, summed in
float32. Error: within 4 ulp of the exact value (tests/kernels/test_gate_math.py; 2.5 seen), where
_vecmath32 promises 1; the gates of an LSTM step lose more than that in the sums before them.
Float64 arguments get _vecmath's float64 functions. NaN propagates, tanh keeps the sign of zero,
and large arguments saturate to 0, 1 or +-1.

Measured (64 steps x 16 x 128 LSTM gates, float32, one thread, thread CPU time): 2.2 ms with
_vecmath.s functions, 1.45 ms with these (numdiff/kernels/recurrent.py).
"""

from __future__ import annotations

import numpy as np

from numdiff.kernels._gemm_loops import _not_inlined
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath import _by_precision, wide_vectors
from numdiff.kernels._vecmath32 import _ONE32, _TWO32, _ZERO32, _exp_tail32, _pow2_32, _reduce_ln2_32, exp32
from numdiff.kernels._vecmath64 import exp64, tanh64

__all__ = ["sigmoid", "tanh", "wide_kernel"]

_F32 = np.float32


@njit(inline="always", cache=True, error_model="numpy")
def _expm1_nonpositive32(x):
    """expm1(x) for x <= 0 in float32 arithmetic: 2**k (r + r**2 p) + (2**k - 1), x = k ln 2 + r.
    Below -30 the result is -1 in float32; a NaN passes the clamp and stays NaN."""
    clamped = _F32(-30.0) if x < _F32(-30.0) else x
    k, r = _reduce_ln2_32(clamped)
    scale = _pow2_32(k)
    return scale * (r + r * (r * _exp_tail32(r))) + (scale - _ONE32)


@njit(inline="always", cache=True, error_model="numpy")
def sigmoid32(x):
    """1 / (1 + e**-x) in float32."""
    return _ONE32 / (_ONE32 + exp32(-x))


@njit(inline="always", cache=True, error_model="numpy")
def sigmoid64(x):
    """1 / (1 + e**-x) in float64."""
    return 1.0 / (1.0 + exp64(-x))


@njit(inline="always", cache=True, error_model="numpy")
def tanh32(x):
    """tanh(x) in float32, with the sign of x (tanh(-0.0) = -0.0)."""
    magnitude = x if x >= _ZERO32 else -x
    e = _expm1_nonpositive32(_F32(-2.0) * magnitude)
    t = -e / (e + _TWO32)
    return t if x > _ZERO32 else (-t if x < _ZERO32 else x)


sigmoid = _by_precision("sigmoid", sigmoid64, sigmoid32)
tanh = _by_precision("gate_tanh", tanh64, tanh32)


@njit(inline="always", cache=True)
def wide_kernel():
    """Mark the function this sits in (inlined into it by Numba) for 512-bit vectors, and keep it
    out of its callers, whose 256-bit preference would otherwise split its vectors again
    (numdiff.kernels._gemm_loops' `_not_inlined`). LLVM's tuning for Intel's AVX-512 server cores
    prefers 256-bit vectors; a gate loop is nothing but polynomial arithmetic on data in the L1
    cache, so twice the lanes pay. Measured on an Emerald Rapids Xeon (one thread, thread CPU
    time, float32, load 13-15): the LSTM gates of 64 steps x 16 x 128 649 -> 542 us, 40 x 24 x 64
    312 -> 266 us. Results are the same bits: each lane computes what it did."""
    wide_vectors()
    _not_inlined()
