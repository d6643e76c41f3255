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
calling thread (numdiff.kernels._blas.gemm) and the softmax in between. Under a causal mask each head
runs in blocks of CAUSAL_BLOCK query rows, each block's products limited to the keys it sees (dK and
dV summed over the blocks); without one, the whole head is one block. Extra memory: one (L, S) score
block per head being worked on (never the (B, L, S) scores of every head), and the head's q (forward)
or k and v (backward) transposed.

The forward keeps its scores transposed, (S, L): each softmax pass (max, exp and sum) runs down the
keys with the queries as the vector lanes, so no row ends in a reduction across lanes, and the
output rows are divided by their sums after the product with V (L x Ev divisions, not L x S). Each
product is a plain or first-transposed GEMM: OpenBLAS took 1.5-1.7x as long with the second operand
transposed (K^T in Q K^T, V^T in dO V^T) at these sizes, so the head's q, k or v is transposed
first. exp is _exp_shifted, which gives 0 where exp would be subnormal. Measured (2026-12-07,
Emerald Rapids, float32, one thread, thread CPU time, forward / backward ms, before -> after; torch
2.13's flash attention forward 0.78, 0.52, 0.28): 128 heads, L 64, E 16: 1.73 / 1.53 -> 0.66 / 1.18;
64 heads, L 64, E 32, causal: 1.08 / 1.41 -> 0.44 / 0.94; 64 heads, L 35, E 32, causal: 0.56 / 1.00
-> 0.27 / 0.55.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels import _vecmath
from numdiff.kernels._blas import PARALLEL_MIN_MACS, gemm, prepare_blas
from numdiff.kernels._checks import check_disjoint, check_float_arrays, check_shape
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath32 import _ZERO32, exp32_normal
from numdiff.kernels._vecmath64 import exp64_normal

__all__ = ["attention_backward", "attention_forward"]

_OPTIONS = dict(nogil=True, error_model="numpy", fastmath={"contract"})
_LOW32 = np.float32(-87.0)  # exp32_normal's lowest argument: its result is normal from there up


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


@njit(inline="always", cache=True, error_model="numpy")
def _exp_shifted32(x):
    """exp(x) of a score less its row's shift (x <= 0 up to rounding), float32; 0 below -87, where
    exp32 would make a subnormal: each subnormal result took a microcode assist of ~100 cycles on
    Intel cores, and a causal or -inf mask makes one per hidden key (whole-head causal forward, 64
    heads x 64 x 64: 1.97 ms, where the unmasked one took 0.49). Such a term is below 2 ** -126 of
    the row's sum, which is at least 1: dropping it is below the sum's rounding. NaN stays NaN."""
    clamped = _LOW32 if x < _LOW32 else x
    e = exp32_normal(clamped)
    return _ZERO32 if x < _LOW32 else e


@njit(inline="always", cache=True, error_model="numpy")
def _exp_shifted64(x):
    """_exp_shifted32 in float64: 0 below -708."""
    clamped = -708.0 if x < -708.0 else x
    e = exp64_normal(clamped)
    return 0.0 if x < -708.0 else e


_exp_shifted = _vecmath._by_precision("attention_exp_shifted", _exp_shifted64, _exp_shifted32)


@njit(cache=True, inline="always")
def _scores(q, k_t, bias, b, scale, causal, r0, r1, c1, scores):
    """scores[r0:r1, :c1] <- scale * q[b] k[b]^T + bias, with k[b]^T given as k_t (E, S); -inf
    where a causal mask hides a key."""
    gemm(False, False, scale, q[b, r0:r1], k_t[:, :c1], 0.0, scores[r0:r1, :c1])
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
        # The scores transposed, key by query: the softmax's max and sum over keys then run down
        # the columns, vectorised across queries, with no reduction within a row.
        scores_t = np.empty((cols, rows), q.dtype)
        q_t = q[b].T.copy()  # a plain product K Q^T: see the module docstring
        shift = np.empty(rows, q.dtype)
        total = np.empty(rows, q.dtype)
        r0 = 0
        while r0 < rows:
            r1, c1 = _visible(rows, cols, causal, r0)
            n = r1 - r0
            block = scores_t[:c1, r0:r1]
            gemm(False, False, scale, k[b, :c1], q_t[:, r0:r1], 0.0, block)
            if bias.shape[0]:
                mask = bias[b % bias.shape[0]]
                for j in range(c1):
                    for i in range(n):
                        block[j, i] += mask[r0 + i, j]
            if causal:  # key j is hidden from the queries before it; its exp below gives 0
                for j in range(r0 + 1, c1):
                    for i in range(min(j, r1) - r0):
                        block[j, i] = -np.inf
            top, sums = shift[r0:r1], total[r0:r1]
            top[:] = block[0]
            # Loops over whole columns of the block: starting each at its first visible query
            # instead (a bound per key) ran the forward 2-4x slower.
            for j in range(1, c1):
                for i in range(n):
                    s = block[j, i]
                    top[i] = s if s > top[i] else top[i]  # a NaN is skipped here and spreads in exp
            for i in range(n):
                # A row that sees no key (max -inf) keeps its scores' -inf: zero probabilities.
                top[i] = top[i] if top[i] != -np.inf else 0.0
            sums[:] = 0.0
            for j in range(c1):
                for i in range(n):
                    e = _exp_shifted(block[j, i] - top[i])
                    block[j, i] = e
                    sums[i] += e
            # out = P V with P unnormalised, then each row divided by its sum: rows x Ev divisions
            # where normalising P took rows x S.
            gemm(True, False, 1.0, block, v[b, :c1], 0.0, out[b, r0:r1, :width])
            for i in range(r0, r1):
                seen = total[i]
                if seen == 0.0:  # sees no key: output 0, log-sum-exp -inf
                    out[b, i, :width] = 0.0
                    out[b, i, width] = -np.inf
                    continue
                inverse = _vecmath.like(1.0 / seen, seen)
                for c in range(width):
                    out[b, i, c] *= inverse
                out[b, i, width] = shift[i] + np.log(seen)
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
        # K and V transposed, so that Q K^T and dO V^T are plain products (as in the forward).
        k_t, v_t = k[b].T.copy(), v[b].T.copy()
        p = np.empty((rows, cols), q.dtype)
        d_s = np.empty((rows, cols), q.dtype)
        r0 = 0
        while r0 < rows:
            r1, c1 = _visible(rows, cols, causal, r0)
            _scores(q, k_t, bias, b, scale, causal, r0, r1, c1, p)
            for i in range(r0, r1):
                lse = out[b, i, width]
                row = p[i, :c1]
                if lse == -np.inf:  # sees no key: zero probabilities
                    row[:] = 0.0
                    continue
                # Over the whole row, hidden keys included (their -inf gives 0): a loop ending at
                # the row's last visible key ran 2-4x slower, as in the forward.
                for j in range(c1):
                    row[j] = _exp_shifted(row[j] - lse)
            block_p, d_out = p[r0:r1, :c1], grad[b, r0:r1, :width]
            gemm(True, False, 1.0, block_p, d_out, accumulate, d_v[:c1])
            block_s = d_s[r0:r1, :c1]
            gemm(False, False, 1.0, d_out, v_t[:, :c1], 0.0, block_s)
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
