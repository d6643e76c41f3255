"""Group normalisation forward with its statistics and a following ReLU in one kernel (CPU, Numba):
what numdiff.compile runs for a traced ``grouped_moments`` + ``grouped_norm`` (+ ``relu``).

BatchNorm in training computes each channel's moments twice in eager mode: once by
``group_norm_moments`` for the running statistics, once inside ``group_norm_forward``; a ReLU
after it is one more read and write of the whole activation. A compiled graph knows all three
calls at build time, so it runs them as this one kernel: per (b, g) group the same two-pass
moments as numdiff.kernels.norm (float64 sums), stored to `moments` (mean, biased variance), `mean`
and `rstd`, then one sweep writing ``out = x * scale + shift``, through ``0 if v <= 0 else v``
(relu's rule: NaN passes) when `relu` is set, after adding a `residual` (a ResNet block's
shortcut) to the stored values when one is given. Every number is computed by the same expressions,
in the same order, as the three eager kernels, so the results agree bit for bit.

Shapes: x and out (B, N, G, K, S) (the view of numdiff.kernels.norm), weight and bias (G, K),
mean and rstd (B, G), moments (2, B, G). Loop nest: the (b, g) groups in parallel (prange over
B * G; a serial build below 32768 elements or at one thread, numdiff.kernels._parallel); the sweep's innermost loop runs over s (over k when S = 1), vectorised by LLVM.
Extra memory: none. The three eager kernels take two passes over x for the moments, three more in
the norm, two for the relu; this one takes three. Measured (float32, one thread, thread CPU time):
BatchNorm 64 x 32 x 32 x 32 1.47 ms against 3.05 for the three, 64 x 64 x 16 x 16 0.70 against 1.47,
InstanceNorm 8 x 32 x 64 x 64 0.49 against 1.19 (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from numdiff.kernels._checks import check_float_arrays, check_shape
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels.norm import _group_moments

__all__ = ["group_norm_forward_fold"]


def _forward_fold(x, weight, bias, eps, out, mean, rstd, moments, residual, add_residual, relu):
    batches, n_count, groups, k_count, s_count = x.shape
    xf = x.reshape((batches, n_count, groups, k_count * s_count))
    of = out.reshape((batches, n_count, groups, k_count * s_count))
    rf = residual.reshape((batches, n_count, groups, k_count * s_count))
    for job in prange(batches * groups):
        b = job // groups
        g = job - b * groups
        mu, var = _group_moments(xf, b, g)
        moments[0, b, g] = mu
        moments[1, b, g] = var
        r = 1.0 / math.sqrt(var + eps)
        mean[b, g] = mu
        rstd[b, g] = r
        if s_count == 1:  # BatchNorm1d's rows, LayerNorm: the scale changes every element
            for n in range(n_count):
                for k in range(k_count):
                    of[b, n, g, k] = (xf[b, n, g, k] - mu) * r * weight[g, k] + bias[g, k]
                if add_residual or relu:
                    _epilogue(of[b, n, g], rf[b, n, g], add_residual, relu)
            continue
        for k in range(k_count):
            scale = weight[g, k] * r
            shift = bias[g, k] - mu * scale
            for n in range(n_count):
                if relu and not add_residual:
                    for s in range(s_count):
                        # The sign of the float64 value is the sign of its rounding: relu of either agrees.
                        v = x[b, n, g, k, s] * scale + shift
                        out[b, n, g, k, s] = 0.0 if v <= 0.0 else v
                else:
                    for s in range(s_count):
                        out[b, n, g, k, s] = x[b, n, g, k, s] * scale + shift
                    if add_residual:  # on the stored (rounded) values, as eager's add reads them
                        _epilogue(out[b, n, g, k], residual[b, n, g, k], add_residual, relu)


@njit(inline="always", cache=True, nogil=True, error_model="numpy", fastmath={"contract", "reassoc"})
def _epilogue(row, residual_row, add_residual, relu):
    """row <- relu(row + residual_row) (each step when asked), in row's dtype: one row, still in cache."""
    for i in range(row.shape[0]):
        v = row[i] + residual_row[i] if add_residual else row[i]
        row[i] = 0.0 if relu and v <= 0.0 else v


# Serial below GRAIN_ELEMENTS or at one thread (no parallel region to open), and with an empty cache
# the parallel build compiles in a helper process while the serial one serves (kernels/_background.py).
_FORWARD_FOLD = serial_and_parallel(_forward_fold, nogil=True, error_model="numpy", fastmath={"contract", "reassoc"})


def group_norm_forward_fold(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float, out: np.ndarray, mean: np.ndarray,
    rstd: np.ndarray, moments: np.ndarray, relu: bool, residual: np.ndarray | None = None,
) -> np.ndarray:  # fmt: skip
    """out (B, N, G, K, S) <- x normalised per (b, g), scaled and shifted per (g, k), plus `residual`
    (x's shape) when one is given, then ReLU'd when `relu`; mean and rstd (B, G) as
    numdiff.kernels.norm.group_norm_forward leaves them, and moments (2, B, G) as group_norm_moments
    does. See the module docstring.

    >>> x = np.arange(4.0).reshape(1, 2, 1, 1, 2); out = np.empty_like(x); m = np.empty((2, 1, 1))
    >>> _ = group_norm_forward_fold(x, np.ones((1, 1)), np.zeros((1, 1)), 0.0, out, np.empty((1, 1)),
    ...                             np.empty((1, 1)), m, True)
    >>> out.ravel().round(4).tolist(), m.ravel().tolist()
    ([0.0, 0.0, 0.4472, 1.3416], [1.5, 1.25])
    """
    op = "group_norm_forward_fold"
    given = {} if residual is None else {"residual": residual}
    check_float_arrays(op, x=x, weight=weight, bias=bias, out=out, mean=mean, rstd=rstd, moments=moments, **given)
    if x.ndim != 5:
        raise ValueError(f"{op}: x must be a 5-D view (B, N, G, K, S), got shape {x.shape}")
    batches, _, groups, k_count, _ = x.shape
    expected = {"weight": (groups, k_count), "bias": (groups, k_count), "out": x.shape, "mean": (batches, groups),
                "rstd": (batches, groups), "moments": (2, batches, groups), "residual": x.shape}  # fmt: skip
    for name, arr in (("weight", weight), ("bias", bias), ("out", out), ("mean", mean), ("rstd", rstd),
                      ("moments", moments), *given.items()):
        check_shape(op, name, arr, expected[name])
    kernel = _FORWARD_FOLD.pick(x.size)[0]
    kernel(x, weight, bias, float(eps), out, mean, rstd, moments, x if residual is None else residual,
           residual is not None, bool(relu))
    return out
