"""Group normalisation forward and backward, one fused pass per direction (CPU, Numba): the kernels
under BatchNorm, InstanceNorm, GroupNorm and LayerNorm (numdiff.ops.norm).

Every one of those layers is the same computation on a 5-D view x (B, N, G, K, S): statistics per
(b, g) over (n, k, s), ``M = N * K * S`` values each, and a scale and shift per (g, k):

    mean[b, g]   = sum x / M,  var[b, g] = sum (x - mean)^2 / M  (biased),  r = 1 / sqrt(var + eps)
    xhat         = (x - mean[b, g]) * r[b, g]
    out          = xhat * w[g, k] + bias[g, k]

BatchNorm (N, C, *spatial) is B = 1, G = C, K = 1; InstanceNorm is B = N, N = 1, G = C, K = 1;
GroupNorm is B = N, N = 1, G = groups, K = C / groups; LayerNorm over a trailing width D is
B = rows, N = 1, G = 1, K = D, S = 1. Backward, with ``dxhat = grad * w``:

    dx        = r * (dxhat - sum(dxhat) / M - xhat * sum(dxhat * xhat) / M)   (sums per (b, g))
    dw[g, k]  = sum over (b, n, s) of grad * xhat,   dbias[g, k] = sum over (b, n, s) of grad

Loop nest: the (b, g) groups in parallel (prange over B * G; serial below GRAIN_ELEMENTS values or
with fewer groups than threads, numdiff.kernels._parallel); per group three sweeps over its
values (forward: the sum and the squared deviations, each over the contiguous (k, s) block of
every n, then the output; backward: the two sums per k, then dx), innermost loops over s that
LLVM vectorises, or over k when S = 1 (LayerNorm's rows), where the scale changes every element.
LayerNorm's (R, 1, 1, D, 1) view runs numdiff.kernels.norm_rows and BatchNorm's (1, N, C, 1, 1)
view of (N, C) input numdiff.kernels.norm_columns, which sweep whole rows. Sums in float64, rounded once on store; the
variance is two-pass, never E[x^2] - E[x]^2 (which cancels for data far from 0). Extra memory:
backward's per-b partial sums of dw and dbias, (B, G, K) each, summed over b by NumPy.
The composed form (mean, var, six elementwise ops and their broadcasting backwards) took about
ten passes per direction; cifar_bn's step spent 40% of its time in one of its broadcast
reductions.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from numdiff.kernels._checks import check_float_arrays, check_shape
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels.norm_columns import (
    batch_norm_columns_backward,
    batch_norm_columns_forward,
    batch_norm_columns_moments,
)
from numdiff.kernels.norm_rows import layer_norm_rows_backward, layer_norm_rows_forward

__all__ = ["group_norm_backward", "group_norm_forward", "group_norm_moments"]

_OPTIONS = dict(nogil=True, error_model="numpy", fastmath={"contract", "reassoc"})


@njit(inline="always", cache=True, nogil=True, error_model="numpy", fastmath={"contract", "reassoc"})
def _group_moments(xf, b, g):
    """(mean, biased variance) of group (b, g) of xf (B, N, G, K*S): two passes, float64 sums.
    Within one (b, n, g) the (k, s) values are contiguous, so the sums run over that flat width."""
    n_count, width = xf.shape[1], xf.shape[3]
    size = n_count * width
    total = 0.0
    for n in range(n_count):
        for j in range(width):
            total += xf[b, n, g, j]
    mu = total / size
    squares = 0.0
    for n in range(n_count):
        for j in range(width):
            d = xf[b, n, g, j] - mu
            squares += d * d
    return mu, squares / size


def _moments(x, moments):
    batches, n_count, groups, k_count, s_count = x.shape
    xf = x.reshape((batches, n_count, groups, k_count * s_count))
    for job in prange(batches * groups):
        b = job // groups
        g = job - b * groups
        mu, var = _group_moments(xf, b, g)
        moments[0, b, g] = mu
        moments[1, b, g] = var


def _forward(x, weight, bias, eps, out, mean, rstd):
    batches, n_count, groups, k_count, s_count = x.shape
    xf = x.reshape((batches, n_count, groups, k_count * s_count))
    of = out.reshape((batches, n_count, groups, k_count * s_count))
    for job in prange(batches * groups):
        b = job // groups
        g = job - b * groups
        mu, var = _group_moments(xf, b, g)
        r = 1.0 / math.sqrt(var + eps)
        mean[b, g] = mu
        rstd[b, g] = r
        if s_count == 1:  # LayerNorm's and BatchNorm1d's rows: the scale changes every element
            for n in range(n_count):
                for k in range(k_count):
                    of[b, n, g, k] = (xf[b, n, g, k] - mu) * r * weight[g, k] + bias[g, k]
            continue
        for k in range(k_count):
            scale = weight[g, k] * r
            shift = bias[g, k] - mu * scale
            for n in range(n_count):
                for s in range(s_count):
                    out[b, n, g, k, s] = x[b, n, g, k, s] * scale + shift


def _backward(grad, x, weight, mean, rstd, dx, dw_parts, db_parts):
    batches, n_count, groups, k_count, s_count = x.shape
    size = n_count * k_count * s_count
    for job in prange(batches * groups):
        b = job // groups
        g = job - b * groups
        mu = mean[b, g]
        r = rstd[b, g]
        sum_dxhat = 0.0
        sum_dxhat_xhat = 0.0
        if s_count == 1:  # rows of scale-per-element: k innermost, contiguous
            for k in range(k_count):
                db_parts[b, g, k] = 0.0
                dw_parts[b, g, k] = 0.0
            for n in range(n_count):
                for k in range(k_count):
                    dy = grad[b, n, g, k, 0]
                    dy_xhat = dy * (x[b, n, g, k, 0] - mu) * r
                    db_parts[b, g, k] += dy
                    dw_parts[b, g, k] += dy_xhat
                    sum_dxhat += weight[g, k] * dy
                    sum_dxhat_xhat += weight[g, k] * dy_xhat
        else:
            for k in range(k_count):
                sum_dy = 0.0
                sum_dy_xhat = 0.0
                for n in range(n_count):
                    for s in range(s_count):
                        dy = grad[b, n, g, k, s]
                        sum_dy += dy
                        sum_dy_xhat += dy * (x[b, n, g, k, s] - mu)
                sum_dy_xhat *= r
                db_parts[b, g, k] = sum_dy
                dw_parts[b, g, k] = sum_dy_xhat
                sum_dxhat += weight[g, k] * sum_dy
                sum_dxhat_xhat += weight[g, k] * sum_dy_xhat
        mean_dxhat = sum_dxhat / size
        mean_dxhat_xhat = sum_dxhat_xhat / size
        # dx = r * (w dy - mean_dxhat - (x - mu) r mean_dxhat_xhat) = w r dy + c1 x + c0
        c1 = -r * r * mean_dxhat_xhat
        c0 = -r * mean_dxhat - c1 * mu
        for k in range(k_count):
            w_r = weight[g, k] * r
            for n in range(n_count):
                for s in range(s_count):
                    dx[b, n, g, k, s] = w_r * grad[b, n, g, k, s] + c1 * x[b, n, g, k, s] + c0


# Each built serially and in parallel (numdiff.kernels._parallel); _pick chooses per call.
_MOMENTS = serial_and_parallel(_moments, **_OPTIONS)
_FORWARD = serial_and_parallel(_forward, **_OPTIONS)
_BACKWARD = serial_and_parallel(_backward, **_OPTIONS)


def _pick(pair, x: np.ndarray):
    """The build of `pair` for a view x: serial below GRAIN_ELEMENTS values or with fewer (b, g)
    groups, the prange's jobs, than threads (numdiff.kernels._parallel.KernelPair.pick)."""
    return pair.pick(x.size, jobs=x.shape[0] * x.shape[2])[0]


def _check(op: str, x: np.ndarray, **arrays: np.ndarray) -> None:
    check_float_arrays(op, x=x, **arrays)
    if x.ndim != 5:
        raise ValueError(f"{op}: x must be a 5-D view (B, N, G, K, S), got shape {x.shape}")
    batches, _, groups, k_count, _ = x.shape
    expected = {"weight": (groups, k_count), "bias": (groups, k_count), "mean": (batches, groups),
                "rstd": (batches, groups), "out": x.shape, "grad": x.shape, "dx": x.shape,
                "dweight": (groups, k_count), "dbias": (groups, k_count)}  # fmt: skip
    for name, arr in arrays.items():
        check_shape(op, name, arr, expected[name])


def _is_rows(x: np.ndarray, *others: np.ndarray) -> bool:
    """Whether x is LayerNorm's view (R, 1, 1, D, 1), statistics per row of D contiguous values,
    and every array C-contiguous: the case numdiff.kernels.norm_rows runs, at the vector width of
    x's dtype and without per-row partial sums."""
    _, n_count, groups, _, s_count = x.shape
    return n_count == groups == s_count == 1 and x.flags.c_contiguous and all(a.flags.c_contiguous for a in others)


def _is_columns(x: np.ndarray, *others: np.ndarray) -> bool:
    """Whether x is BatchNorm's view of (N, C) input, (1, N, C, 1, 1), statistics per column over
    the rows, and every array C-contiguous: the case numdiff.kernels.norm_columns runs, over whole
    rows instead of one strided column a job."""
    batches, n_count, _, k_count, s_count = x.shape
    return (batches == k_count == s_count == 1 and n_count > 1 and x.flags.c_contiguous
            and all(a.flags.c_contiguous for a in others))


def group_norm_forward(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float, out: np.ndarray, mean: np.ndarray, rstd: np.ndarray
) -> np.ndarray:
    """out (B, N, G, K, S) <- normalised x, scaled and shifted per (g, k); mean and rstd (B, G)
    <- each group's mean and 1 / sqrt(biased variance + eps). See the module docstring.

    >>> x = np.arange(4.0).reshape(1, 2, 1, 1, 2); out = np.empty_like(x); m = np.empty((1, 1))
    >>> _ = group_norm_forward(x, np.ones((1, 1)), np.zeros((1, 1)), 0.0, out, m, np.empty((1, 1)))
    >>> out.ravel().round(4).tolist(), m.tolist()
    ([-1.3416, -0.4472, 0.4472, 1.3416], [[1.5]])
    """
    _check("group_norm_forward", x, weight=weight, bias=bias, out=out, mean=mean, rstd=rstd)
    if _is_rows(x, weight, bias, out, mean, rstd):
        rows, width = x.shape[0], x.shape[3]
        layer_norm_rows_forward(
            x.reshape(rows, width), weight.reshape(width), bias.reshape(width), float(eps), out.reshape(rows, width),
            mean.reshape(rows), rstd.reshape(rows),
        )  # fmt: skip
        return out
    if _is_columns(x, weight, bias, out, mean, rstd):
        rows, columns = x.shape[1], x.shape[2]
        batch_norm_columns_forward(
            x.reshape(rows, columns), weight.reshape(columns), bias.reshape(columns), float(eps),
            out.reshape(rows, columns), mean.reshape(columns), rstd.reshape(columns),
        )  # fmt: skip
        return out
    _pick(_FORWARD, x)(x, weight, bias, float(eps), out, mean, rstd)
    return out


def group_norm_moments(x: np.ndarray, moments: np.ndarray) -> np.ndarray:
    """moments (2, B, G) <- each group's mean and biased variance (the statistics BatchNorm's and
    InstanceNorm's running estimates follow), by the forward's two passes.

    >>> group_norm_moments(np.arange(4.0).reshape(1, 2, 1, 1, 2), np.empty((2, 1, 1))).ravel().tolist()
    [1.5, 1.25]
    """
    _check("group_norm_moments", x)
    check_float_arrays("group_norm_moments", x=x, moments=moments)
    check_shape("group_norm_moments", "moments", moments, (2, x.shape[0], x.shape[2]))
    if _is_columns(x, moments):
        batch_norm_columns_moments(x.reshape(x.shape[1], x.shape[2]), moments.reshape(2, x.shape[2]))
        return moments
    _pick(_MOMENTS, x)(x, moments)
    return moments


def group_norm_backward(
    grad: np.ndarray, x: np.ndarray, weight: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
    dx: np.ndarray, dweight: np.ndarray, dbias: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """dx (B, N, G, K, S), dweight and dbias (G, K) <- the gradients of group_norm_forward's output
    for `grad`, from x and the forward's mean and rstd. See the module docstring."""
    _check("group_norm_backward", x, grad=grad, weight=weight, mean=mean, rstd=rstd, dx=dx, dweight=dweight, dbias=dbias)
    if _is_rows(grad, x, weight, mean, rstd, dx, dweight, dbias):
        rows, width = x.shape[0], x.shape[3]
        layer_norm_rows_backward(
            grad.reshape(rows, width), x.reshape(rows, width), weight.reshape(width), mean.reshape(rows),
            rstd.reshape(rows), dx.reshape(rows, width), dweight.reshape(width), dbias.reshape(width),
        )  # fmt: skip
        return dx
    if _is_columns(grad, x, weight, mean, rstd, dx, dweight, dbias):
        rows, columns = x.shape[1], x.shape[2]
        batch_norm_columns_backward(
            grad.reshape(rows, columns), x.reshape(rows, columns), weight.reshape(columns), mean.reshape(columns),
            rstd.reshape(columns), dx.reshape(rows, columns), dweight.reshape(columns), dbias.reshape(columns),
        )  # fmt: skip
        return dx
    if x.shape[0] == 1:  # BatchNorm's view: one b, whose partial sums are the sums (no NumPy sum calls)
        _pick(_BACKWARD, x)(grad, x, weight, mean, rstd, dx, dweight.reshape((1,) + weight.shape),
                            dbias.reshape((1,) + weight.shape))  # fmt: skip
        return dx
    parts = np.empty((2, x.shape[0]) + weight.shape, x.dtype)
    _pick(_BACKWARD, x)(grad, x, weight, mean, rstd, dx, parts[0], parts[1])
    dweight[...] = parts[0].sum(axis=0)
    dbias[...] = parts[1].sum(axis=0)
    return dx
