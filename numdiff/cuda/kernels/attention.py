"""Scaled dot-product attention on CUDA: the twin of numdiff.kernels.attention (same arguments,
layouts and formulas, documented there).

Forward: one thread per (head, query row) walks the keys twice, once for the row's maximum
score and once for the exponentials, their sum and the weighted values: no score matrix is
stored. Backward: one thread per (head, query row) computes ``rowsum(dO * O)`` and dQ, then one
thread per (head, key) computes dK and dV, rebuilding each probability from the saved
log-sum-exp. Grid: ceil(count / THREADS) blocks of THREADS threads.
"""

from __future__ import annotations

import math
from typing import Any

from numba import cuda

from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels._checks import check_float_arrays

__all__ = ["attention_backward", "attention_forward"]

THREADS = 64


@cuda.jit(device=True)
def _score(q, k, bias, b, i, j, scale, causal):
    """scale * q[b, i] . k[b, j] + bias, or -inf where the causal mask hides key j."""
    if causal and j > i:
        return -math.inf
    total = 0.0
    for e in range(q.shape[2]):
        total += q[b, i, e] * k[b, j, e]
    total *= scale
    if bias.shape[0]:
        total += bias[b % bias.shape[0], i, j]
    return total


@cuda.jit
def _forward(q, k, v, bias, scale, causal, out):
    index = cuda.grid(1)
    heads, rows = q.shape[0], q.shape[1]
    cols, width = v.shape[1], v.shape[2]
    if index < heads * rows:
        b, i = index // rows, index % rows
        top = -math.inf
        for j in range(cols):
            top = max(top, _score(q, k, bias, b, i, j, scale, causal))
        for c in range(width):
            out[b, i, c] = 0.0
        if top == -math.inf:
            out[b, i, width] = -math.inf
            return
        total = 0.0
        for j in range(cols):
            p = math.exp(_score(q, k, bias, b, i, j, scale, causal) - top)
            total += p
            for c in range(width):
                out[b, i, c] += p * v[b, j, c]
        for c in range(width):
            out[b, i, c] /= total
        out[b, i, width] = top + math.log(total)


@cuda.jit(device=True)
def _score_grad(grad, out, q, k, v, bias, centre, b, i, j, scale, causal):
    """dS[b, i, j] = P (dO_i . v_j - rowsum(dO_i * O_i) + d lse_i), P rebuilt from lse."""
    lse = out[b, i, v.shape[2]]
    if lse == -math.inf:
        return 0.0
    p = math.exp(_score(q, k, bias, b, i, j, scale, causal) - lse)
    d_p = 0.0
    for c in range(v.shape[2]):
        d_p += grad[b, i, c] * v[b, j, c]
    return p * (d_p + centre[b, i])


@cuda.jit
def _query_grads(grad, out, q, k, v, bias, scale, causal, centre, d_q):
    index = cuda.grid(1)
    heads, rows, depth = q.shape
    if index < heads * rows:
        b, i = index // rows, index % rows
        width = v.shape[2]
        c_value = grad[b, i, width]
        for c in range(width):
            c_value -= grad[b, i, c] * out[b, i, c]
        centre[b, i] = c_value
        for e in range(depth):
            d_q[b, i, e] = 0.0
        for j in range(k.shape[1]):
            d_s = _score_grad(grad, out, q, k, v, bias, centre, b, i, j, scale, causal)
            for e in range(depth):
                d_q[b, i, e] += scale * d_s * k[b, j, e]


@cuda.jit
def _key_grads(grad, out, q, k, v, bias, scale, causal, centre, d_k, d_v):
    index = cuda.grid(1)
    heads, cols = k.shape[0], k.shape[1]
    if index < heads * cols:
        b, j = index // cols, index % cols
        depth, width = q.shape[2], v.shape[2]
        for e in range(depth):
            d_k[b, j, e] = 0.0
        for c in range(width):
            d_v[b, j, c] = 0.0
        for i in range(q.shape[1]):
            lse = out[b, i, width]
            if lse == -math.inf:
                continue
            p = math.exp(_score(q, k, bias, b, i, j, scale, causal) - lse)
            for c in range(width):
                d_v[b, j, c] += p * grad[b, i, c]
            d_s = _score_grad(grad, out, q, k, v, bias, centre, b, i, j, scale, causal)
            for e in range(depth):
                d_k[b, j, e] += scale * d_s * q[b, i, e]


def _device_array(array: CudaArray) -> Any:
    return array.as_numba()


def _launch(kernel: Any, count: int, device: Any, *args: Any) -> None:
    if count:
        with cuda.gpus[getattr(device, "index", None) or 0]:
            kernel[(count + THREADS - 1) // THREADS, THREADS](*args)


def _check(op: str, q: CudaArray, k: CudaArray, v: CudaArray, bias: CudaArray) -> None:
    check_float_arrays(op, q=q, k=k, v=v, bias=bias)
    heads, rows, depth = q.shape
    cols = k.shape[1]
    if k.ndim != 3 or k.shape != (heads, cols, depth) or v.ndim != 3 or v.shape[:2] != (heads, cols):
        raise ValueError(f"{op}: expected q (B, L, E), k (B, S, E), v (B, S, Ev), got {q.shape}, {k.shape}, {v.shape}")
    if bias.shape != (0, 0, 0) and (bias.shape[1:] != (rows, cols) or bias.shape[0] == 0 or heads % bias.shape[0]):
        raise ValueError(f"{op}: bias must be (Bb, {rows}, {cols}) with Bb dividing {heads}, or (0, 0, 0), got {bias.shape}")


def attention_forward(q: CudaArray, k: CudaArray, v: CudaArray, bias: CudaArray, scale: float, causal: bool, out: CudaArray) -> CudaArray:
    """numdiff.kernels.attention.attention_forward on CUDA."""
    _check("attention_forward", q, k, v, bias)
    if out.shape != q.shape[:2] + (v.shape[2] + 1,):
        raise ValueError(f"attention_forward: out must have shape {q.shape[:2] + (v.shape[2] + 1,)}, got {out.shape}")
    check_float_arrays("attention_forward", q=q, out=out)
    arrays = [_device_array(a) for a in (q, k, v, bias)]
    _launch(_forward, q.shape[0] * q.shape[1], q.device, *arrays, float(scale), bool(causal), _device_array(out))
    return out


def attention_backward(
    grad: CudaArray, out: CudaArray, q: CudaArray, k: CudaArray, v: CudaArray, bias: CudaArray,
    scale: float, causal: bool, res: CudaArray,
) -> CudaArray:  # fmt: skip
    """numdiff.kernels.attention.attention_backward on CUDA."""
    _check("attention_backward", q, k, v, bias)
    heads, rows, depth = q.shape
    cols, width = v.shape[1], v.shape[2]
    for name, arr in (("grad", grad), ("out", out)):
        if arr.shape != (heads, rows, width + 1):
            raise ValueError(f"attention_backward: {name} must have shape {(heads, rows, width + 1)}, got {arr.shape}")
    if res.shape != (heads, (rows + cols) * depth + cols * width):
        raise ValueError(f"attention_backward: res must have shape {(heads, (rows + cols) * depth + cols * width)}, got {res.shape}")
    check_float_arrays("attention_backward", q=q, grad=grad, out=out, res=res)
    centre = CudaArray.empty((heads, rows), q.dtype, q.device)
    d_q = CudaArray.empty((heads, rows, depth), q.dtype, q.device)
    d_k = CudaArray.empty((heads, cols, depth), q.dtype, q.device)
    d_v = CudaArray.empty((heads, cols, width), q.dtype, q.device)
    arrays = [_device_array(a) for a in (grad, out, q, k, v, bias)]
    _launch(_query_grads, heads * rows, q.device, *arrays, float(scale), bool(causal), _device_array(centre), _device_array(d_q))
    _launch(_key_grads, heads * cols, q.device, *arrays, float(scale), bool(causal), _device_array(centre),
            _device_array(d_k), _device_array(d_v))  # fmt: skip
    res[:, : rows * depth] = d_q.reshape(heads, rows * depth)
    res[:, rows * depth : (rows + cols) * depth] = d_k.reshape(heads, cols * depth)
    res[:, (rows + cols) * depth :] = d_v.reshape(heads, cols * width)
    return res
