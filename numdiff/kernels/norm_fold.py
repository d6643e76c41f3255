"""Group normalisation forward with its statistics and a following ReLU, LeakyReLU or Hardtanh
(ReLU6) in one kernel (CPU, Numba): what numdiff.compile runs for a traced ``grouped_moments`` +
``grouped_norm`` (+ ``relu``, ``leaky_relu`` or ``hardtanh``).

BatchNorm in training computes each channel's moments twice in eager mode: once by
``group_norm_moments`` for the running statistics, once inside ``group_norm_forward``; an
activation after it is one more read and write of the whole activation. A compiled graph knows all
three calls at build time, so it runs them as this one kernel: per (b, g) group the same two-pass
moments as numdiff.kernels.norm (float64 sums), stored to `moments` (mean, biased variance), `mean`
and `rstd`, then one sweep writing ``out = x * scale + shift``, after adding a `residual` (a ResNet
block's shortcut) to the stored values when one is given, through the activation: relu's
``0 if v <= 0 else v`` (NaN passes), leaky_relu's ``v if v > 0 else v * slope`` or hardtanh's
clamp (relu6). When the value
before the activation is kept (leaky_relu's backward reads its input), the sweep writes both arrays,
`out` and `activated`, from the row while it is in cache. Every number is computed by the same
expressions, in the same order, as the eager kernels, so the results agree bit for bit.

Shapes: x, out and activated (B, N, G, K, S) (the view of numdiff.kernels.norm), weight and bias
(G, K), mean and rstd (B, G), moments (2, B, G). Loop nest: the (b, g) groups in parallel (prange
over B * G; a serial build below 32768 elements or at one thread, numdiff.kernels._parallel); per
(b, g) and k the sweep runs n then s (k when S = 1), innermost vectorised by LLVM, and relu or
hardtanh in place is taken in that sweep. The other epilogues (a residual, leaky_relu, a kept input)
run as a second pass over the same (b, :, g, k) values just written, still in cache (per row when
S = 1). Every loop indexes the whole arrays: no row views, whose reference counts cost more than the
arithmetic of a short row (S = 64 or 16: BatchNorm after a ResNet's or MobileNet's later stages).
Extra memory: none. The three eager kernels take two passes over x for the moments, three more in
the norm, two for the activation; this one takes three (four or five with an epilogue pass).
Measured (float32, one thread, thread CPU time): BatchNorm 64 x 32 x 32 x 32 with relu 1.47 ms
against 3.05 for the three, 64 x 64 x 16 x 16 0.70 against 1.47, InstanceNorm 8 x 32 x 64 x 64 0.49
against 1.19 (benchmarks/RESULTS.md). Without row views (session 19, loaded machine, 32-image
batches): BatchNorm + relu over 64 x 8 x 8 maps 0.125 -> 0.062 ms, 128 x 4 x 4 0.19 -> 0.07, with
a residual 0.15 -> 0.08 and 0.21 -> 0.11; 16 x 32 x 32 unchanged within noise.
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


NO_ACTIVATION, RELU, LEAKY_RELU, HARDTANH = 0, 1, 2, 3
ACTIVATIONS = {None: NO_ACTIVATION, "relu": RELU, "leaky_relu": LEAKY_RELU, "hardtanh": HARDTANH}
"""The activations the sweep can apply, by the name of their op, as the kernel's `act` code."""


def _forward_fold(x, weight, bias, eps, out, mean, rstd, moments, residual, add_residual, act, low, high, activated,
                  separate):
    batches, n_count, groups, k_count, s_count = x.shape
    xf = x.reshape((batches, n_count, groups, k_count * s_count))
    of = out.reshape((batches, n_count, groups, k_count * s_count))
    # With S = 1 a row runs over k: the same memory seen as (B, N, G, 1, K) for the epilogue.
    rows = (batches, n_count, groups, 1, k_count * s_count)
    out_rows, residual_rows, activated_rows = out.reshape(rows), residual.reshape(rows), activated.reshape(rows)
    epilogue = add_residual or act != NO_ACTIVATION
    # relu and hardtanh in place are taken in the sweep itself; the other cases by _epilogue
    fused_relu = act == RELU and not add_residual and not separate
    fused_clamp = act == HARDTANH and not add_residual and not separate
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
                if epilogue:  # on the row while it is in cache
                    _epilogue(out_rows, residual_rows, activated_rows, b, g, 0, n, n + 1, add_residual, act, low,
                              high, separate)
            continue
        for k in range(k_count):
            scale = weight[g, k] * r
            shift = bias[g, k] - mu * scale
            if fused_relu:
                for n in range(n_count):
                    for s in range(s_count):
                        # The sign of the float64 value is the sign of its rounding: relu of either agrees.
                        v = x[b, n, g, k, s] * scale + shift
                        out[b, n, g, k, s] = 0.0 if v <= 0.0 else v
                continue
            if fused_clamp:  # relu6: the clamp of the stored (rounded) value
                for n in range(n_count):
                    for s in range(s_count):
                        out[b, n, g, k, s] = x[b, n, g, k, s] * scale + shift
                        v = out[b, n, g, k, s]
                        out[b, n, g, k, s] = low if v < low else (high if v > high else v)
                continue
            for n in range(n_count):
                for s in range(s_count):
                    out[b, n, g, k, s] = x[b, n, g, k, s] * scale + shift
            if epilogue:  # on the stored (rounded) values, as eager's add and activation read them
                _epilogue(out, residual, activated, b, g, k, 0, n_count, add_residual, act, low, high,
                          separate)


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract", "reassoc"})
def _activate(v, act, low, high):
    """relu's ``0 if v <= 0 else v`` (NaN passes), leaky_relu's ``v if v > 0 else v * low`` (the
    product in float64, as eager's kernel takes it) or hardtanh's clamp to [low, high] (NaN passes), of
    a value already in the row's dtype."""
    if act == RELU:
        return 0.0 if v <= 0.0 else v
    if act == LEAKY_RELU:
        return v if v > 0.0 else v * low
    if act == HARDTANH:
        return low if v < low else (high if v > high else v)
    return v


# _epilogue and _activate are plain calls (LLVM inlines them), not Numba IR inlining: inlined into
# _forward_fold at two sites, the residual row loop ran scalar (BatchNorm 64 x 32 x 32 x 32 + residual
# + relu, float32, one thread: 7.8 ms, 0.93 as a call) and the kernel's first compile took 0.4 s more.
# A per-row _sweep inlined by Numba (the session 18 kernel) cost ~25 ns a row in reference counts of
# its row views and of the inlined arguments: with S = 64 more than the row's own arithmetic.
@njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract", "reassoc"})
def _epilogue(out, residual, activated, b, g, k, n_start, n_stop, add_residual, act, low, high, separate):
    """out[b, n_start:n_stop, g, k] <- itself + residual's values there (when asked), then the
    activation of it, into out itself or, when `separate` (the value before the activation is kept),
    into activated; in out's dtype, on values still in cache. One loop nest per case, chosen outside
    the loops, so that each vectorises (a branch on `act` inside a loop kept LLVM from it)."""
    s_count = out.shape[4]
    if add_residual and act == RELU and not separate:  # a ResNet block's relu(bn(conv(x)) + shortcut)
        for n in range(n_start, n_stop):
            for s in range(s_count):
                v = out[b, n, g, k, s] + residual[b, n, g, k, s]
                out[b, n, g, k, s] = 0.0 if v <= 0.0 else v
        return
    if add_residual:
        for n in range(n_start, n_stop):
            for s in range(s_count):
                out[b, n, g, k, s] = out[b, n, g, k, s] + residual[b, n, g, k, s]
    if act == NO_ACTIVATION:
        return
    if separate:
        for n in range(n_start, n_stop):
            for s in range(s_count):
                activated[b, n, g, k, s] = _activate(out[b, n, g, k, s], act, low, high)
    elif act == RELU:
        for n in range(n_start, n_stop):
            for s in range(s_count):
                v = out[b, n, g, k, s]
                out[b, n, g, k, s] = 0.0 if v <= 0.0 else v
    elif act == HARDTANH:
        for n in range(n_start, n_stop):
            for s in range(s_count):
                v = out[b, n, g, k, s]
                out[b, n, g, k, s] = low if v < low else (high if v > high else v)
    else:
        for n in range(n_start, n_stop):
            for s in range(s_count):
                out[b, n, g, k, s] = _activate(out[b, n, g, k, s], act, low, high)


# Serial below GRAIN_ELEMENTS or at one thread (no parallel region to open), and with an empty cache
# the parallel build compiles in a helper process while the serial one serves (kernels/_background.py).
_FORWARD_FOLD = serial_and_parallel(_forward_fold, nogil=True, error_model="numpy", fastmath={"contract", "reassoc"})


def group_norm_forward_fold(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float, out: np.ndarray, mean: np.ndarray,
    rstd: np.ndarray, moments: np.ndarray, activation: str | None, residual: np.ndarray | None = None,
    negative_slope: float = 0.0, activated: np.ndarray | None = None, min_val: float = -1.0, max_val: float = 1.0,
) -> np.ndarray:  # fmt: skip
    """out (B, N, G, K, S) <- x normalised per (b, g), scaled and shifted per (g, k), plus `residual`
    (x's shape) when one is given, then `activation` applied: "relu", "leaky_relu" with
    `negative_slope`, "hardtanh" with `min_val` and `max_val` (relu6), or None. With `activated`
    (x's shape) given, out keeps the value before the activation and `activated` receives it after
    (a backward reads the norm's output). mean and rstd (B, G) as numdiff.kernels.norm.group_norm_forward
    leaves them, and moments (2, B, G) as group_norm_moments does. Returns the activated array. See
    the module docstring.

    >>> x = np.arange(4.0).reshape(1, 2, 1, 1, 2); out = np.empty_like(x); m = np.empty((2, 1, 1))
    >>> _ = group_norm_forward_fold(x, np.ones((1, 1)), np.zeros((1, 1)), 0.0, out, np.empty((1, 1)),
    ...                             np.empty((1, 1)), m, "relu")
    >>> out.ravel().round(4).tolist(), m.ravel().tolist()
    ([0.0, 0.0, 0.4472, 1.3416], [1.5, 1.25])
    """
    op = "group_norm_forward_fold"
    if activation not in ACTIVATIONS:
        raise ValueError(f"{op}: activation must be one of {sorted(a for a in ACTIVATIONS if a)} or None, "
                         f"got {activation!r}")
    if activated is not None and activation is None:
        raise ValueError(f"{op}: an activated array was given without an activation")
    given = {} if residual is None else {"residual": residual}
    if activated is not None:
        given["activated"] = activated
    check_float_arrays(op, x=x, weight=weight, bias=bias, out=out, mean=mean, rstd=rstd, moments=moments, **given)
    if x.ndim != 5:
        raise ValueError(f"{op}: x must be a 5-D view (B, N, G, K, S), got shape {x.shape}")
    batches, _, groups, k_count, _ = x.shape
    expected = {"weight": (groups, k_count), "bias": (groups, k_count), "out": x.shape, "mean": (batches, groups),
                "rstd": (batches, groups), "moments": (2, batches, groups), "residual": x.shape,
                "activated": x.shape}  # fmt: skip
    for name, arr in (("weight", weight), ("bias", bias), ("out", out), ("mean", mean), ("rstd", rstd),
                      ("moments", moments), *given.items()):
        check_shape(op, name, arr, expected[name])
    # Serial when the prange has fewer (b, g) jobs than threads, as eager's norm kernels choose
    # (numdiff.kernels.norm._pick): BatchNorm1d's view has one group, and a parallel region would run
    # it on one thread while the others wait at its barrier.
    kernel = _FORWARD_FOLD.pick(x.size, jobs=batches * groups)[0]
    # The activation's numbers rounded to x's dtype first, as the eager float32 kernels take their attrs
    # (numdiff.kernels.elementwise): a float32 value times a float32 slope is exact in float64, so the
    # one rounding on store gives float32's own product, bit for bit.
    cast = x.dtype.type
    low, high = ((float(cast(min_val)), float(cast(max_val))) if activation == "hardtanh"
                 else (float(cast(negative_slope)), 0.0))
    kernel(x, weight, bias, float(eps), out, mean, rstd, moments, x if residual is None else residual,
           residual is not None, ACTIVATIONS[activation], low, high, out if activated is None else activated,
           activated is not None)
    return out if activated is None else activated
