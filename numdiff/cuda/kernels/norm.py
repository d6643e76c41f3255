"""Group normalisation on CUDA: the twins of numdiff.kernels.norm (same arguments, same 5-D view
(B, N, G, K, S), formulas documented there).

Forward: one thread per (b, g) group computes its mean and rstd (two passes over its M = N*K*S
values, sums in float64), then one thread per element writes the output. Backward: one thread
per (b, g) group sums grad and grad * xhat per k (the per-b partials of dbias and dweight, and the
group's two means that dx needs), one thread per element writes dx, and one thread per (g, k)
adds the partials over b. Grids: ceil(count / THREADS) blocks of THREADS threads. Every launcher
checks its arrays (types, dtype, device, layout, shapes) before the first launch.
"""

from __future__ import annotations

import math
from typing import Any

from numba import cuda

from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels._checks import check_float_arrays, check_shape, flat

__all__ = ["group_norm_backward", "group_norm_forward", "group_norm_moments"]

THREADS = 128


@cuda.jit(device=True)
def _at(b, n, g, k, s, n_count, groups, k_count, s_count):
    """The flat index of x[b, n, g, k, s] in a C-contiguous (B, N, G, K, S) array."""
    return (((b * n_count + n) * groups + g) * k_count + k) * s_count + s


@cuda.jit(device=True)
def _moments_of(x, job, n_count, groups, k_count, s_count):
    """(mean, biased variance) of group job = b * G + g: two passes, float64 sums."""
    b = job // groups
    g = job - b * groups
    size = n_count * k_count * s_count
    total = 0.0
    for n in range(n_count):
        for k in range(k_count):
            for s in range(s_count):
                total += x[_at(b, n, g, k, s, n_count, groups, k_count, s_count)]
    mu = total / size
    squares = 0.0
    for n in range(n_count):
        for k in range(k_count):
            for s in range(s_count):
                d = x[_at(b, n, g, k, s, n_count, groups, k_count, s_count)] - mu
                squares += d * d
    return mu, squares / size


@cuda.jit
def _group_stats(x, eps, mean, rstd, batches, n_count, groups, k_count, s_count):
    job = cuda.grid(1)
    if job >= batches * groups:
        return
    mu, var = _moments_of(x, job, n_count, groups, k_count, s_count)
    mean[job] = mu
    rstd[job] = 1.0 / math.sqrt(var + eps)


@cuda.jit
def _group_moments(x, moments, batches, n_count, groups, k_count, s_count):
    jobs = batches * groups
    job = cuda.grid(1)
    if job >= jobs:
        return
    mu, var = _moments_of(x, job, n_count, groups, k_count, s_count)
    moments[job] = mu
    moments[jobs + job] = var


@cuda.jit
def _normalize(x, weight, bias, mean, rstd, out, n_count, groups, k_count, s_count):
    i = cuda.grid(1)
    if i >= x.size:
        return
    rest = i // s_count
    k = rest % k_count
    rest //= k_count
    g = rest % groups
    b = rest // groups // n_count
    job = b * groups + g
    gk = g * k_count + k
    out[i] = (x[i] - mean[job]) * rstd[job] * weight[gk] + bias[gk]


@cuda.jit
def _grad_sums(grad, x, weight, mean, rstd, dw_parts, db_parts, moments, batches, n_count, groups, k_count, s_count):
    job = cuda.grid(1)
    if job >= batches * groups:
        return
    b = job // groups
    g = job - b * groups
    mu = mean[job]
    r = rstd[job]
    sum_dxhat = 0.0
    sum_dxhat_xhat = 0.0
    for k in range(k_count):
        sum_dy = 0.0
        sum_dy_xhat = 0.0
        for n in range(n_count):
            for s in range(s_count):
                at = _at(b, n, g, k, s, n_count, groups, k_count, s_count)
                sum_dy += grad[at]
                sum_dy_xhat += grad[at] * (x[at] - mu)
        sum_dy_xhat *= r
        part = job * k_count + k
        db_parts[part] = sum_dy
        dw_parts[part] = sum_dy_xhat
        sum_dxhat += weight[g * k_count + k] * sum_dy
        sum_dxhat_xhat += weight[g * k_count + k] * sum_dy_xhat
    size = n_count * k_count * s_count
    moments[2 * job] = sum_dxhat / size
    moments[2 * job + 1] = sum_dxhat_xhat / size


@cuda.jit
def _input_grad(grad, x, weight, mean, rstd, moments, dx, n_count, groups, k_count, s_count):
    i = cuda.grid(1)
    if i >= x.size:
        return
    rest = i // s_count
    k = rest % k_count
    rest //= k_count
    g = rest % groups
    b = rest // groups // n_count
    job = b * groups + g
    r = rstd[job]
    xhat = (x[i] - mean[job]) * r
    dx[i] = r * (weight[g * k_count + k] * grad[i] - moments[2 * job] - xhat * moments[2 * job + 1])


@cuda.jit
def _param_grads(dw_parts, db_parts, dweight, dbias, batches, params):
    gk = cuda.grid(1)
    if gk >= params:
        return
    dw = 0.0
    db = 0.0
    for b in range(batches):
        dw += dw_parts[b * params + gk]
        db += db_parts[b * params + gk]
    dweight[gk] = dw
    dbias[gk] = db


def _launch(kernel: Any, count: int, device: Any, *args: Any) -> None:
    if count == 0:
        return
    with cuda.gpus[getattr(device, "index", None) or 0]:
        kernel[(count + THREADS - 1) // THREADS, THREADS](*args)


def _check(op: str, x: CudaArray, **arrays: CudaArray) -> None:
    check_float_arrays(op, x=x, **arrays)
    if x.ndim != 5:
        raise ValueError(f"{op}: x must be a 5-D view (B, N, G, K, S), got shape {x.shape}")
    batches, _, groups, k_count, _ = x.shape
    expected = {"weight": (groups, k_count), "bias": (groups, k_count), "mean": (batches, groups),
                "rstd": (batches, groups), "out": x.shape, "grad": x.shape, "dx": x.shape,
                "dweight": (groups, k_count), "dbias": (groups, k_count), "moments": (2, batches, groups)}  # fmt: skip
    for name, arr in arrays.items():
        check_shape(op, name, arr, expected[name])


def group_norm_forward(
    x: CudaArray, weight: CudaArray, bias: CudaArray, eps: float, out: CudaArray, mean: CudaArray, rstd: CudaArray
) -> CudaArray:
    """numdiff.kernels.norm.group_norm_forward on CUDA."""
    _check("group_norm_forward", x, weight=weight, bias=bias, out=out, mean=mean, rstd=rstd)
    batches, n_count, groups, k_count, s_count = x.shape
    if x.size == 0:
        return out
    _launch(_group_stats, batches * groups, x.device, flat(x), float(eps), flat(mean), flat(rstd),
            batches, n_count, groups, k_count, s_count)  # fmt: skip
    _launch(_normalize, x.size, x.device, flat(x), flat(weight), flat(bias), flat(mean), flat(rstd), flat(out),
            n_count, groups, k_count, s_count)  # fmt: skip
    return out


def group_norm_moments(x: CudaArray, moments: CudaArray) -> CudaArray:
    """numdiff.kernels.norm.group_norm_moments on CUDA."""
    _check("group_norm_moments", x, moments=moments)
    batches, n_count, groups, k_count, s_count = x.shape
    if x.size:
        _launch(_group_moments, batches * groups, x.device, flat(x), flat(moments), batches, n_count, groups, k_count,
                s_count)  # fmt: skip
    return moments


def group_norm_backward(
    grad: CudaArray, x: CudaArray, weight: CudaArray, mean: CudaArray, rstd: CudaArray,
    dx: CudaArray, dweight: CudaArray, dbias: CudaArray,
) -> CudaArray:  # fmt: skip
    """numdiff.kernels.norm.group_norm_backward on CUDA."""
    _check("group_norm_backward", x, grad=grad, weight=weight, mean=mean, rstd=rstd, dx=dx, dweight=dweight, dbias=dbias)
    batches, n_count, groups, k_count, s_count = x.shape
    params = groups * k_count
    parts = CudaArray.empty((2, batches, params), x.dtype, x.device)
    parts[...] = 0
    moments = CudaArray.empty((batches * groups * 2,), x.dtype, x.device)
    if x.size:
        _launch(_grad_sums, batches * groups, x.device, flat(grad), flat(x), flat(weight), flat(mean), flat(rstd),
                flat(parts[0]), flat(parts[1]), flat(moments), batches, n_count, groups, k_count, s_count)  # fmt: skip
        _launch(_input_grad, x.size, x.device, flat(grad), flat(x), flat(weight), flat(mean), flat(rstd), flat(moments),
                flat(dx), n_count, groups, k_count, s_count)  # fmt: skip
    _launch(_param_grads, params, x.device, flat(parts[0]), flat(parts[1]), flat(dweight), flat(dbias), batches, params)
    return dx
