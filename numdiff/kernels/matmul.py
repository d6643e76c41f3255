"""Matrix-multiply kernels (CPU, Numba): 2-D GEMM and batched GEMM, forward and backward.

Every kernel writes into a caller-provided, C-contiguous output array of the same floating
dtype as its inputs (float32 or float64); nothing else is allocated.

Method, chosen by measurement: BLAS (SciPy's OpenBLAS, called from ``@njit`` through
:mod:`numdiff.kernels._blas`), single-threaded per call, with the product split into one block
of rows or columns per Numba thread. On 1024^3 float32 with two threads this measured 11 ms
(about 190 GFLOP/s), against 12 ms for threaded OpenBLAS and 14 ms for PyTorch's MKL on the
same two threads, on the AMD EPYC machine of the first sessions; no loop nest written in Numba
came close. On the AVX-512 Xeon of later sessions (2026-12-02, one nn product, two threads) the
split took 7.2 ms, OpenBLAS's own two threads 6.65 ms and PyTorch 6.3 ms (256x512x512: 0.54,
0.50 and 0.40 ms); OpenBLAS's pool still stays off, since its threads would spin beside Numba's
(numdiff.kernels._blas). Batched products give each thread an equal run of the (slice, output
row) cells when the batch has at least as many slices as threads. Transposed operands are passed
as flags, never copied.

Backward of ``out = a @ b`` with upstream gradient ``g`` is two more products:
``grad_a = g @ b.T`` (:func:`gemm_nt`) and ``grad_b = a.T @ g`` (:func:`gemm_tn`), which
numdiff.ops.linalg calls through its own matmul so that they are differentiable too.

The public functions check shapes, dtypes, layout and that ``out`` shares no memory with an
operand in Python before the compiled code runs, because a Numba kernel indexing past an
array's end corrupts memory instead of raising. An inner dimension of 0 gives zeros.
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, prange

from numdiff.kernels._background import defer_to_helper
from numdiff.kernels._blas import (
    PARALLEL_MIN_MACS,
    gemm,
    gemm_batch,
    gemm_block,
    gemm_parallel,
    prepare_blas,
    split_by_rows,
)
from numdiff.kernels._checks import check_disjoint, check_float_arrays, check_shape
from numdiff.kernels._parallel import contiguous_run
from numdiff.kernels._self_healing_cache import njit

__all__ = [
    "gemm_nn",
    "gemm_nt",
    "gemm_tn",
    "bgemm_nn",
    "bgemm_nt",
    "bgemm_tn",
]


# --------------------------------------------------------------------------- compiled core


@njit(cache=True, nogil=True, parallel=True)
def _bgemm_batch_parallel(trans_a, trans_b, a, b, out, parts):
    # Each thread takes one contiguous run of the (slice, output row) cells (contiguous_run): whole
    # slices when the threads divide the batch, else a row block of the slice a run cuts (a
    # slice a thread, as before, left 3 slices on 2 threads at 2 against 1).
    batch, m = out.shape[0], out.shape[1]
    for t in prange(parts):
        start, stop = contiguous_run(batch * m, parts, t)
        while start < stop:
            i, r0 = start // m, start % m
            r1 = min(m, r0 + stop - start)
            start += r1 - r0
            a_rows = a[i][:, r0:r1] if trans_a else a[i][r0:r1]
            gemm(trans_a, trans_b, 1.0, a_rows, b[i], 0.0, out[i][r0:r1])


@njit(cache=True, nogil=True)
def _bgemm(trans_a, trans_b, a, b, out, parts):
    """out[i] = op(a[i]) @ op(b[i]); parallel over the batch when it has a slice per thread and
    the whole batch is worth a parallel region, otherwise each product is split across the
    threads (or, when small, runs on the calling thread)."""
    k = a.shape[1] if trans_a else a.shape[2]
    if out.shape[0] >= parts and parts > 1 and out.size * k >= PARALLEL_MIN_MACS:
        _bgemm_batch_parallel(trans_a, trans_b, a, b, out, parts)
    else:
        for i in range(out.shape[0]):
            gemm_parallel(trans_a, trans_b, 1.0, a[i], b[i], 0.0, out[i], parts)


# With an empty cache, a helper process compiles _bgemm (it calls the parallel builds) while
# gemm_batch, its serial twin, runs the products (numdiff.kernels._background).
defer_to_helper(_bgemm, lambda trans_a, trans_b, a, b, out, parts: gemm_batch(trans_a, trans_b, a, b, out))


@njit(cache=True, nogil=True, parallel=True)
def _gemm_pair(trans_a1, trans_b1, a1, b1, out1, trans_a2, trans_b2, a2, b2, out2, parts):
    """out1 = op(a1) @ op(b1) and out2 = op(a2) @ op(b2), two independent products in one parallel
    region: threads 0 .. parts//2 - 1 split the first (blocks of rows or columns, as
    numdiff.kernels._blas.split_by_rows says), the rest the second. At two threads each product is
    one whole BLAS call on a thread of its own."""
    first = parts // 2
    k1 = a1.shape[0] if trans_a1 else a1.shape[1]
    k2 = a2.shape[0] if trans_a2 else a2.shape[1]
    rows1 = split_by_rows(out1.shape[0], out1.shape[1], k1, first)
    rows2 = split_by_rows(out2.shape[0], out2.shape[1], k2, parts - first)
    for t in prange(parts):
        if t < first:
            gemm_block(trans_a1, trans_b1, 1.0, a1, b1, 0.0, out1, t, first, rows1)
        else:
            gemm_block(trans_a2, trans_b2, 1.0, a2, b2, 0.0, out2, t - first, parts - first, rows2)


@njit(cache=True, nogil=True)
def _gemm_pair_serial(trans_a1, trans_b1, a1, b1, out1, trans_a2, trans_b2, a2, b2, out2, parts):
    gemm(trans_a1, trans_b1, 1.0, a1, b1, 0.0, out1)
    gemm(trans_a2, trans_b2, 1.0, a2, b2, 0.0, out2)


defer_to_helper(_gemm_pair, _gemm_pair_serial)


def run_pair_checked(trans_a1: bool, trans_b1: bool, a1: np.ndarray, b1: np.ndarray, out1: np.ndarray,
                     trans_a2: bool, trans_b2: bool, a2: np.ndarray, b2: np.ndarray, out2: np.ndarray,
                     parts: int) -> None:
    """Two independent 2-D products ``out1 = op(a1) @ op(b1)``, ``out2 = op(a2) @ op(b2)`` with
    `parts` >= 2 Numba threads, half on each (numdiff.compile pairs a layer's input and weight
    gradients; shapes, dtypes, layouts and overlaps checked at build time).

    Splitting each product across all threads, one after the other, costs two parallel regions
    and runs BLAS on half-size blocks, which is less efficient: the four half blocks of the two
    256x512x512 gradient products of an MLP layer took 2.21-2.27 ms of one thread's CPU time,
    the two whole products 2.05-2.10 ms (medians of 40, 2026-12-02, loaded machine).
    """
    _gemm_pair(trans_a1, trans_b1, a1, b1, out1, trans_a2, trans_b2, a2, b2, out2, parts)


def run_checked(trans_a: bool, trans_b: bool, a: np.ndarray, b: np.ndarray, out: np.ndarray, parts: int) -> None:
    """``out[i] = op(a[i]) @ op(b[i])`` on 3-D arrays that the public functions' checks passed
    (numdiff.compile calls it with shapes checked at build time), with `parts` Numba threads.

    A product too small to split runs :func:`gemm_batch` on the calling thread, decided here
    rather than inside :func:`_bgemm`, so that a process that only meets small products never
    compiles the parallel builds (a second of a cold start).
    """
    batch, m, n = out.shape
    k = a.shape[1] if trans_a else a.shape[2]
    batch_parallel = batch >= parts and out.size * k >= PARALLEL_MIN_MACS
    split = m * n * k >= PARALLEL_MIN_MACS and max(m, n) >= 2 * parts
    if parts > 1 and (batch_parallel or split):
        _bgemm(trans_a, trans_b, a, b, out, parts)
    else:
        gemm_batch(trans_a, trans_b, a, b, out)


def _run(op: str, trans_a: bool, trans_b: bool, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    check_disjoint(op, {"out": out}, {"a": a, "b": b})
    run_product_checked(trans_a, trans_b, a, b, out)


def run_product_checked(trans_a: bool, trans_b: bool, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = op(a) @ op(b)`` (2-D, or 3-D batches) on arguments the caller has checked as the
    public functions do: C-contiguous ndarrays of one float dtype (float32 or float64), matching
    shapes, and an `out` that overlaps neither operand (one the caller has just allocated).

    For an op that made `out` itself and read the shapes off its operands (Linear's forward),
    the public functions' checks are repeated work: 2.3 of gemm_nt's 4.8 us on a 1x185 row by a
    128x185 weight (thread CPU time, loaded machine, 2026-12-07).

    >>> out = np.empty((1, 2)); run_product_checked(False, True, np.ones((1, 3)), np.ones((2, 3)), out)
    >>> out.tolist()
    [[3.0, 3.0]]
    """
    prepare_blas(out.dtype)
    if out.ndim == 2:
        a, b, out = a[None], b[None], out[None]
    run_checked(trans_a, trans_b, a, b, out, _threads_for(out.size * (a.shape[1] if trans_a else a.shape[2])))


def _threads_for(macs: int) -> int:
    """The thread count to offer a product of `macs` multiply-adds: 1 below
    :data:`PARALLEL_MIN_MACS`, where :func:`run_checked` runs on the calling thread whatever the
    count, so a small product skips Numba's get_num_threads (a lock and a call: 0.5-1.3 us, a
    tenth of a batch-1 linear layer's forward)."""
    return 1 if macs < PARALLEL_MIN_MACS else get_num_threads()


# --------------------------------------------------------------------------- 2-D GEMM


def gemm_nn(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[m, n] = sum_k a[m, k] * b[k, n]`` -- the forward of ``a @ b``.

    Shapes: a (M, K), b (K, N), out (M, N). Loop nest: BLAS m, n, k blocked.
    Extra memory: BLAS packing buffers only. Parallel: row or column blocks per thread.

    >>> a = np.ones((2, 3), np.float32); b = np.ones((3, 4), np.float32)
    >>> gemm_nn(a, b, np.empty((2, 4), np.float32))[0, 0]
    np.float32(3.0)
    """
    check_float_arrays("gemm_nn", a=a, b=b, out=out)
    m, k = a.shape
    check_shape("gemm_nn", "b", b, (k, None))
    check_shape("gemm_nn", "out", out, (m, b.shape[1]))
    _run("gemm_nn", False, False, a, b, out)
    return out


def gemm_nt(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[m, n] = sum_k a[m, k] * b[n, k]`` -- ``a @ b.T``; gives ``grad_a = g @ b.T``.

    Shapes: a (M, K), b (N, K), out (M, N). Loop nest: BLAS m, n, k blocked.
    Extra memory: BLAS packing buffers only. Parallel: row or column blocks per thread.

    >>> a = np.ones((2, 3)); b = np.ones((4, 3))
    >>> gemm_nt(a, b, np.empty((2, 4))).shape
    (2, 4)
    """
    check_float_arrays("gemm_nt", a=a, b=b, out=out)
    m, k = a.shape
    check_shape("gemm_nt", "b", b, (None, k))
    check_shape("gemm_nt", "out", out, (m, b.shape[0]))
    _run("gemm_nt", False, True, a, b, out)
    return out


def gemm_tn(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[m, n] = sum_k a[k, m] * b[k, n]`` -- ``a.T @ b``; gives ``grad_b = a.T @ g``.

    Shapes: a (K, M), b (K, N), out (M, N). Loop nest: BLAS m, n, k blocked.
    Extra memory: BLAS packing buffers only. Parallel: row or column blocks per thread.

    >>> a = np.ones((3, 2)); b = np.ones((3, 4))
    >>> gemm_tn(a, b, np.empty((2, 4))).shape
    (2, 4)
    """
    check_float_arrays("gemm_tn", a=a, b=b, out=out)
    k, m = a.shape
    check_shape("gemm_tn", "b", b, (k, None))
    check_shape("gemm_tn", "out", out, (m, b.shape[1]))
    _run("gemm_tn", True, False, a, b, out)
    return out


PAIR_MIN_MACS = 1 << 22
"""Multiply-adds per product from which :func:`linear_backward_products` runs its two products
side by side (numdiff.compile.schedule pairs a traced layer's products from the same size)."""


def linear_backward_products(
    grad: np.ndarray, weight: np.ndarray, x: np.ndarray, grad_x: np.ndarray, grad_weight: np.ndarray
) -> None:
    """A linear layer's two gradient products: ``grad_x = grad @ weight`` and ``grad_weight =
    grad.T @ x``, with grad (N, Out), weight (Out, In), x (N, In), all C-contiguous.

    Both have N * Out * In multiply-adds. From :data:`PAIR_MIN_MACS` at two or more threads they
    run in one parallel region, each product a whole single-threaded BLAS call on half the threads
    (:func:`run_pair_checked`); otherwise one after the other, each split across all threads.
    Splitting both costs two regions and half-size BLAS blocks, one of which writes its output in
    strided half rows.

    >>> g, w, x = np.ones((4, 2)), np.ones((2, 3)), np.ones((4, 3))
    >>> gx, gw = np.empty((4, 3)), np.empty((2, 3)); linear_backward_products(g, w, x, gx, gw)
    >>> gx[0].tolist(), gw[0].tolist()
    ([2.0, 2.0, 2.0], [4.0, 4.0, 4.0])
    """
    op = "linear_backward_products"
    check_float_arrays(op, grad=grad, weight=weight, x=x, grad_x=grad_x, grad_weight=grad_weight)
    rows, outputs = grad.shape
    check_shape(op, "weight", weight, (outputs, None))
    check_shape(op, "x", x, (rows, weight.shape[1]))
    check_shape(op, "grad_x", grad_x, x.shape)
    check_shape(op, "grad_weight", grad_weight, weight.shape)
    check_disjoint(op, {"grad_x": grad_x, "grad_weight": grad_weight}, {"grad": grad, "weight": weight, "x": x})
    run_linear_backward_checked(grad, weight, x, grad_x, grad_weight)


def run_linear_backward_checked(
    grad: np.ndarray, weight: np.ndarray, x: np.ndarray, grad_x: np.ndarray, grad_weight: np.ndarray
) -> None:
    """:func:`linear_backward_products` on arguments the caller has checked as it does (Linear's
    first-order backward: operands of the layer's forward, outputs it has just allocated); its
    checks are 3.7 of its 10 us on a batch-1 layer of 185 -> 128 (thread CPU time, 2026-12-07).

    >>> gx, gw = np.empty((1, 2)), np.empty((1, 2))
    >>> run_linear_backward_checked(np.ones((1, 1)), np.ones((1, 2)), np.ones((1, 2)), gx, gw)
    >>> gx.tolist(), gw.tolist()
    ([[1.0, 1.0]], [[1.0, 1.0]])
    """
    rows, outputs = grad.shape
    parts = _threads_for(rows * outputs * weight.shape[1])
    if parts < 2 or rows * outputs * weight.shape[1] < PAIR_MIN_MACS:
        run_product_checked(False, False, grad, weight, grad_x)
        run_product_checked(True, False, grad, x, grad_weight)
        return
    prepare_blas(grad.dtype)
    run_pair_checked(False, False, grad, weight, grad_x, True, False, grad, x, grad_weight, parts)


# --------------------------------------------------------------------------- batched GEMM


def _check_batched(op: str, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    check_float_arrays(op, a=a, b=b, out=out)
    if a.ndim != 3:
        raise ValueError(f"{op}: a must be 3-D (batch, rows, cols), got shape {a.shape}")
    if a.shape[0] != b.shape[0] or a.shape[0] != out.shape[0]:
        raise ValueError(f"{op}: batch sizes differ: a {a.shape}, b {b.shape}, out {out.shape}")


def bgemm_nn(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[i] = a[i] @ b[i]`` for every batch index i.

    Shapes: a (B, M, K), b (B, K, N), out (B, M, N). Loop nest: for i in B: BLAS GEMM.
    Extra memory: none. Parallel: equal runs of (slice, row) per thread when B >= threads, else each
    product split into row/column blocks per thread.

    >>> bgemm_nn(np.ones((2, 1, 3)), np.ones((2, 3, 1)), np.empty((2, 1, 1)))[1, 0, 0]
    np.float64(3.0)
    """
    _check_batched("bgemm_nn", a, b, out)
    _, m, k = a.shape
    check_shape("bgemm_nn", "b", b, (None, k, None))
    check_shape("bgemm_nn", "out", out, (None, m, b.shape[2]))
    _run("bgemm_nn", False, False, a, b, out)
    return out


def bgemm_nt(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[i] = a[i] @ b[i].T`` for every batch index i.

    Shapes: a (B, M, K), b (B, N, K), out (B, M, N). Loop nest and parallelism as
    :func:`bgemm_nn`.

    >>> bgemm_nt(np.ones((2, 1, 3)), np.ones((2, 5, 3)), np.empty((2, 1, 5))).shape
    (2, 1, 5)
    """
    _check_batched("bgemm_nt", a, b, out)
    _, m, k = a.shape
    check_shape("bgemm_nt", "b", b, (None, None, k))
    check_shape("bgemm_nt", "out", out, (None, m, b.shape[1]))
    _run("bgemm_nt", False, True, a, b, out)
    return out


def bgemm_tn(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[i] = a[i].T @ b[i]`` for every batch index i.

    Shapes: a (B, K, M), b (B, K, N), out (B, M, N). Loop nest and parallelism as
    :func:`bgemm_nn`.

    >>> bgemm_tn(np.ones((2, 3, 4)), np.ones((2, 3, 5)), np.empty((2, 4, 5))).shape
    (2, 4, 5)
    """
    _check_batched("bgemm_tn", a, b, out)
    _, k, m = a.shape
    check_shape("bgemm_tn", "b", b, (None, k, None))
    check_shape("bgemm_tn", "out", out, (None, m, b.shape[2]))
    _run("bgemm_tn", True, False, a, b, out)
    return out
