"""Scaled dot-product attention kernels (CPU, Numba): forward and backward, one head at a time.

Shapes: q (B, L, E), k (B, S, E), v (B, S, Ev), all C-contiguous of one float dtype; ``bias``
(Bb, L, S) added to the scores, Bb dividing B and head b reading ``bias[b % Bb]`` (1: one mask for
every head; B: one each; N with heads ordered (H, N): one per sequence), or (0, 0, 0) for none;
``causal`` hides key j from query i when j > i (PyTorch's top-left alignment).

Forward writes ``out`` (B, L, Ev + 1): the attention output and, in the last column, each row's
log-sum-exp of the scores (-inf for a row that sees no key; its output is 0, as PyTorch's).
Backward recomputes the probabilities from q, k and that log-sum-exp instead of keeping them:

    P = exp(scale * q k^T + bias - lse),  dV = P^T dO,  dP = dO V^T,
    dS = P * (dP - rowsum(dO * O) + d lse),  dQ = scale * dS K,  dK = scale * dS^T Q

and writes ``res`` (B, L*E + S*E + S*Ev): dQ, dK and dV of each head, flat, side by side.

Loop nest: heads in parallel (prange over B; serial below PARALLEL_MIN_MACS multiply-adds or with
fewer heads than threads, numdiff.kernels._parallel), per head the products as BLAS GEMMs on the
calling thread (numdiff.kernels._blas.gemm) and the softmax rows in between. Under a causal mask
each head runs in blocks of CAUSAL_BLOCK query rows, each block's products limited to the keys it
sees (dK and dV summed over the blocks); without one, the whole head is one block. Extra memory: one
(L, S) score block per head being worked on (never the (B, L, S) scores of every head).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels import _vecmath
from numdiff.kernels._blas import PARALLEL_MIN_MACS, gemm, prepare_blas
from numdiff.kernels._checks import check_disjoint, check_float_arrays, check_shape
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels.softmax import _row_max

__all__ = ["attention_backward", "attention_forward"]

_OPTIONS = dict(nogil=True, error_model="numpy", fastmath={"contract"})


CAUSAL_BLOCK = 32
"""Query rows per block under a causal mask. Block [r0, r1) sees keys [0, min(r1, S)) only, so the
products skip the hidden upper triangle block by block: (n + 1) / 2n of the full work with n blocks
(3/4 at L 64, 5/8 at L 128). Measured (2026-12-06, float32, one thread, forward / backward ms, whole
rows -> blocks of 32 -> blocks of 16): 64 heads, L 64, E 32: 0.68 / 1.36 -> 0.65 / 1.31 -> 0.75 /
1.52; 32 heads, L 128, E 64: 1.82 / 3.96 -> 1.57 / 3.51 -> 1.92 / 3.91 (smaller blocks lose more to
the extra BLAS calls than they save)."""


@njit(cache=True, inline="always")
def _visible(rows, cols, causal, r0):
    """(r1, c1): the block of query rows [r0, r1) and the keys [0, c1) that any of them sees."""
    if not causal:
        return rows, cols
    r1 = min(r0 + CAUSAL_BLOCK, rows)
    return r1, min(r1, cols)


@njit(cache=True, inline="always")
def _scores(q, k, bias, b, scale, causal, r0, r1, c1, scores):
    """scores[r0:r1, :c1] <- scale * q[b] k[b]^T + bias, -inf where a causal mask hides a key."""
    gemm(False, True, scale, q[b, r0:r1], k[b, :c1], 0.0, scores[r0:r1, :c1])
    if bias.shape[0]:
        mask = bias[b % bias.shape[0]]
        for i in range(r0, r1):
            for j in range(c1):
                scores[i, j] += mask[i, j]
    if causal:
        for i in range(r0, r1):
            for j in range(i + 1, c1):
                scores[i, j] = -np.inf


def _forward(q, k, v, bias, scale, causal, out):
    heads, rows, _ = q.shape
    cols, width = v.shape[1], v.shape[2]
    for b in prange(heads):
        scores = np.empty((rows, cols), q.dtype)
        r0 = 0
        while r0 < rows:
            r1, c1 = _visible(rows, cols, causal, r0)
            _scores(q, k, bias, b, scale, causal, r0, r1, c1, scores)
            for i in range(r0, r1):
                row = scores[i, :c1]
                # Under a causal mask, row i's keys past i are -inf: their probabilities are 0.
                seen = min(i + 1, cols) if causal else cols
                # Constants in the scores' precision: a float64 -inf or 1.0 made a float32 row's exp
                # and scaling run in float64, at half the SIMD lanes (1.48 -> 1.10 ms with B 16, 4
                # heads, T 64, E 32, causal, one thread; PyTorch 0.92). The maximum in eight running
                # lanes: one chain of compares took 1.10 -> 0.96 ms at 128 heads, T 64, E 16.
                top = _row_max(row[:seen]) if seen else _vecmath.like(-np.inf, out[b, i, width])
                if top == -np.inf:  # sees no key: zero probabilities, output 0
                    row[:] = 0.0
                    out[b, i, width] = -np.inf
                    continue
                # exp in a loop of its own, which vectorises; summed by lane_sum (a running sum in
                # the same loop is a chain of dependent adds that kept the whole loop scalar: 4.9 ms
                # for B 16, 4 heads, T 64, E 32, float32, where PyTorch takes 0.9).
                for j in range(seen):
                    row[j] = _vecmath.exp(row[j] - top)
                row[seen:] = 0.0
                total = _vecmath.lane_sum(row[:seen])
                inverse = _vecmath.like(1.0 / total, top)
                for j in range(seen):
                    row[j] *= inverse
                out[b, i, width] = top + np.log(total)
            gemm(False, False, 1.0, scores[r0:r1, :c1], v[b, :c1], 0.0, out[b, r0:r1, :width])
            r0 = r1


def _backward(grad, out, q, k, v, bias, scale, causal, res):
    heads, rows, depth = q.shape
    cols, width = v.shape[1], v.shape[2]
    # Row blocks add their share into dK and dV (beta 1), which start at 0; one block writes them.
    accumulate = 1.0 if causal else 0.0
    for b in prange(heads):
        d_q = res[b, : rows * depth].reshape(rows, depth)
        d_k = res[b, rows * depth : (rows + cols) * depth].reshape(cols, depth)
        d_v = res[b, (rows + cols) * depth :].reshape(cols, width)
        if causal:
            d_k[:] = 0.0
            d_v[:] = 0.0
        p = np.empty((rows, cols), q.dtype)
        d_s = np.empty((rows, cols), q.dtype)
        r0 = 0
        while r0 < rows:
            r1, c1 = _visible(rows, cols, causal, r0)
            _scores(q, k, bias, b, scale, causal, r0, r1, c1, p)
            for i in range(r0, r1):
                lse = out[b, i, width]
                # As in the forward: a causal row's keys past i have probability 0, and a row that
                # sees no key (lse -inf) has none; the exp loop, without a select per element,
                # vectorises.
                seen = 0 if lse == -np.inf else (min(i + 1, cols) if causal else cols)
                row = p[i, :c1]
                for j in range(seen):
                    row[j] = _vecmath.exp(row[j] - lse)
                row[seen:] = 0.0
            block_p, d_out = p[r0:r1, :c1], grad[b, r0:r1, :width]
            gemm(True, False, 1.0, block_p, d_out, accumulate, d_v[:c1])
            block_s = d_s[r0:r1, :c1]
            gemm(False, True, 1.0, d_out, v[b, :c1], 0.0, block_s)
            for i in range(r0, r1):
                centre = grad[b, i, width]  # d lse_i: softmax's own gradient adds P * d lse
                for c in range(width):
                    centre -= grad[b, i, c] * out[b, i, c]
                for j in range(c1):
                    d_s[i, j] = p[i, j] * (d_s[i, j] + centre)
            gemm(False, False, scale, block_s, k[b, :c1], 0.0, d_q[r0:r1])
            gemm(True, False, scale, block_s, q[b, r0:r1], accumulate, d_k[:c1])
            r0 = r1


# Each built serially and in parallel; _pick chooses per call.
_FORWARD = serial_and_parallel(_forward, **_OPTIONS)
_BACKWARD = serial_and_parallel(_backward, **_OPTIONS)


def _pick(pair, q: np.ndarray, k: np.ndarray, v: np.ndarray):
    """The build of `pair` for these heads: serial below PARALLEL_MIN_MACS multiply-adds (the
    products', B * L * S * (E + Ev)) or with fewer heads than threads."""
    heads, rows, depth = q.shape
    return pair.pick(heads * rows * k.shape[1] * (depth + v.shape[2]), PARALLEL_MIN_MACS, jobs=heads)[0]


def _check(op: str, q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray) -> tuple[int, int, int, int, int]:
    check_float_arrays(op, q=q, k=k, v=v, bias=bias)
    if q.ndim != 3:
        raise ValueError(f"{op}: q must be 3-D (B, L, E), got shape {q.shape}")
    heads, rows, depth = q.shape
    check_shape(op, "k", k, (heads, None, depth))
    cols = k.shape[1]
    check_shape(op, "v", v, (heads, cols, None))
    if bias.shape != (0, 0, 0) and (bias.ndim != 3 or bias.shape[1:] != (rows, cols) or bias.shape[0] == 0 or heads % bias.shape[0]):
        raise ValueError(f"{op}: bias must be (Bb, {rows}, {cols}) with Bb dividing {heads}, or (0, 0, 0), got {bias.shape}")
    return heads, rows, cols, depth, v.shape[2]


def attention_forward(q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray, scale: float, causal: bool, out: np.ndarray) -> np.ndarray:
    """out (B, L, Ev + 1) <- [softmax(scale * q k^T + bias) v, log-sum-exp of each row].

    >>> q = np.zeros((1, 2, 3)); v = np.arange(4.0).reshape(1, 2, 2)
    >>> attention_forward(q, q, v, np.zeros((0, 0, 0)), 1.0, True, np.empty((1, 2, 3)))[0, :, :2]
    array([[0., 1.],
           [1., 2.]])
    """
    heads, rows, cols, _, width = _check("attention_forward", q, k, v, bias)
    check_float_arrays("attention_forward", q=q, out=out)
    check_shape("attention_forward", "out", out, (heads, rows, width + 1))
    check_disjoint("attention_forward", {"out": out}, {"q": q, "k": k, "v": v, "bias": bias})
    prepare_blas(q.dtype)
    _pick(_FORWARD, q, k, v)(q, k, v, bias, float(scale), bool(causal), out)
    return out


def attention_backward(
    grad: np.ndarray, out: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray,
    scale: float, causal: bool, res: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """res (B, L*E + S*E + S*Ev) <- dQ, dK, dV from grad (B, L, Ev + 1), the gradient of
    :func:`attention_forward`'s ``out``."""
    heads, rows, cols, depth, width = _check("attention_backward", q, k, v, bias)
    check_float_arrays("attention_backward", q=q, grad=grad, out=out, res=res)
    for name, arr in (("grad", grad), ("out", out)):
        check_shape("attention_backward", name, arr, (heads, rows, width + 1))
    check_shape("attention_backward", "res", res, (heads, (rows + cols) * depth + cols * width))
    check_disjoint("attention_backward", {"res": res}, {"grad": grad, "out": out, "q": q, "k": k, "v": v, "bias": bias})
    prepare_blas(q.dtype)
    _pick(_BACKWARD, q, k, v)(grad, out, q, k, v, bias, float(scale), bool(causal), res)
    return res
