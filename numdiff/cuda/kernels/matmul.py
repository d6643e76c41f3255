"""Matrix-multiply CUDA kernel: batched GEMM tiled through shared memory.

``out[z, m, n] = sum_k a[z, m, k] * b[z, k, n]``. Operands are read through their strides, so the
backward products ``g @ b.T`` and ``a.T @ g`` pass transposed views with no copy. Each block of
TILE x TILE threads owns one TILE x TILE output tile of batch ``blockIdx.z``; per step of the k loop
it stages one tile of a and one of b in shared memory, synchronises, and accumulates in a
register. Grid: (ceil(N / TILE), ceil(M / TILE), batch).
"""

from __future__ import annotations

import math

import numpy as np
from numba import config, cuda, from_dtype

from numdiff.cuda.kernels._checks import check_disjoint

# Numba's simulator runs every thread in Python, so it gets small tiles; the maths is the same.
TILE = 4 if config.ENABLE_CUDASIM else 16


def _make_kernel(dtype: np.dtype):
    element = from_dtype(dtype)
    zero = dtype.type(0)

    @cuda.jit
    def bgemm(out, a, a_meta, b, b_meta, m_size, n_size, k_size):
        """out[z, m, n] (contiguous) = sum_k a[z, m, k] b[z, k, n]; metas are [offset, sz, s0, s1]."""
        a_tile = cuda.shared.array((TILE, TILE), element)
        b_tile = cuda.shared.array((TILE, TILE), element)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        z = cuda.blockIdx.z
        m = cuda.blockIdx.y * TILE + ty
        n = cuda.blockIdx.x * TILE + tx
        a_base = a_meta[0] + z * a_meta[1]
        b_base = b_meta[0] + z * b_meta[1]
        acc = zero
        for t in range((k_size + TILE - 1) // TILE):
            ka = t * TILE + tx
            kb = t * TILE + ty
            if m < m_size and ka < k_size:
                a_tile[ty, tx] = a[a_base + m * a_meta[2] + ka * a_meta[3]]
            else:
                a_tile[ty, tx] = zero
            if kb < k_size and n < n_size:
                b_tile[ty, tx] = b[b_base + kb * b_meta[2] + n * b_meta[3]]
            else:
                b_tile[ty, tx] = zero
            cuda.syncthreads()
            for k in range(TILE):
                acc += a_tile[ty, k] * b_tile[k, tx]
            cuda.syncthreads()
        if m < m_size and n < n_size:
            out[(z * m_size + m) * n_size + n] = acc

    return bgemm


_KERNELS: dict = {}


def _as_batched(x):
    return x if x.ndim == 3 else x.reshape((1,) + x.shape)


def bgemm(a, b, out) -> None:
    """out (B, M, N) contiguous <- a (B, M, K) @ b (B, K, N); 2-D operands are a batch of one.

    Checks shapes, dtypes, devices and that out overlaps no operand before the launch (a bad
    index would corrupt memory).
    """
    a3, b3, out3 = _as_batched(a), _as_batched(b), _as_batched(out)
    batch, m_size, k_size = a3.shape
    if b3.shape[0] != batch or b3.shape[1] != k_size or out3.shape != (batch, m_size, b3.shape[2]):
        raise ValueError(f"matmul: shapes {a.shape} @ {b.shape} -> {out.shape} do not agree")
    if not (a.dtype == b.dtype == out.dtype) or a.dtype.kind != "f":
        raise TypeError(f"matmul: expected one float dtype, got {a.dtype}, {b.dtype} -> {out.dtype}")
    if not (a.device == b.device == out.device):
        raise ValueError(f"matmul: operands on {a.device}, {b.device}, output on {out.device}")
    if not out3.flags.c_contiguous:
        raise ValueError("matmul: the output must be C-contiguous")
    check_disjoint("matmul", {"out": out}, {"a": a, "b": b})
    n_size = b3.shape[2]
    if out3.size == 0:
        return
    if k_size == 0:
        out3[...] = 0
        return
    kernel = _KERNELS.get(a.dtype)
    if kernel is None:
        kernel = _KERNELS[a.dtype] = _make_kernel(a.dtype)
    grid = (math.ceil(n_size / TILE), math.ceil(m_size / TILE), batch)
    kernel[grid, (TILE, TILE)](
        out3._buffer[out3._offset :],
        a3._buffer,
        a3.meta(a3.shape),
        b3._buffer,
        b3.meta(b3.shape),
        m_size,
        n_size,
        k_size,
    )


# The CPU kernels' names and argument order (numdiff.kernels.matmul), so ops dispatch one-for-one.
def gemm_nn(a, b, out):
    """out = a @ b."""
    bgemm(a, b, out)
    return out


def gemm_nt(a, b, out):
    """out = a @ b.T (the gradient of a in out = a @ b)."""
    bgemm(a, b.T, out)
    return out


def gemm_tn(a, b, out):
    """out = a.T @ b (the gradient of b in out = a @ b)."""
    bgemm(a.T, b, out)
    return out


def bgemm_nn(a, b, out):
    """out[i] = a[i] @ b[i]."""
    bgemm(a, b, out)
    return out


def bgemm_nt(a, b, out):
    """out[i] = a[i] @ b[i].T."""
    bgemm(a, b.transpose(0, 2, 1), out)
    return out


def bgemm_tn(a, b, out):
    """out[i] = a[i].T @ b[i]."""
    bgemm(a.transpose(0, 2, 1), b, out)
    return out
