"""What numdiff.kernels._blas.gemm runs: the BLAS calls (and, on the loops route, numdiff's loops),
compiled once per dtype and called from every kernel by address.

:func:`gemm_by_blas`, :func:`gemm_by_blas_in_tiles` and :func:`gemm_by_loops_or_blas` are the product
with gemm's checks, shapes and flags: BLAS ``sgemm``/``dgemm`` with explicit leading dimensions (any
row-major view whose rows are unit-stride), ``sgemv``/``dgemv`` for a one-row or one-column c and for
``a @ b.T`` with at most :data:`GEMV_ROWS_MAX` rows; the second cuts products with few rows or
few columns of c into tiles for OpenBLAS's small-matrix kernels (numdiff.kernels._gemm_tiles), and the third takes
numdiff.kernels._gemm_loops.loop_gemm where it suits the product (loops_suit). Which one this process
runs follows its GEMM route (numdiff.kernels._gemm_route), read in Python when the build is made: the
BLAS route never compiles the loops (5-6 s of its float32 build, dot_rows included, on an empty cache).

:func:`fill_gemm_slot` compiles (or loads from the disk cache) one of them for one dtype, with
every operand an any-layout view (op(a) and op(b) read-only), and puts its address in that dtype's
:class:`~numdiff.kernels._kernel_address.KernelSlot`; :func:`call_gemm_build` is the call through it
that kernels compile in, converting their arrays to those types. Built this way, a kernel that
calls gemm holds one call instead of a copy of gemm's tree (see numdiff.kernels._kernel_address).

The helpers below are plain calls, not ``inline="always"``: Numba's own inlining copies a helper's IR
and types it again at every call site (the tiled build held ``_blas_gemm`` twice, each with three
``_leading_dim``), all in Python before LLVM sees it. Built as calls, the float32 build with tiles took 2.5-2.7 s of CPU
on an empty cache instead of 4.1-4.2 (the one without tiles 1.9 instead of 2.1; one process each, load
15); each product still makes one BLAS call, behind a few direct calls that LLVM may inline.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core import cgutils
from numba.core.dispatcher import Dispatcher
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from numdiff.kernels._blas_library import GEMM_SYMBOLS, GEMV_SYMBOLS
from numdiff.kernels._gemm_loops import loop_gemm, loops_suit
from numdiff.kernels._gemm_tiles import column_tile_shape, tile_shape
from numdiff.kernels._kernel_address import KernelSlot, call_through_slot
from numdiff.kernels._self_healing_cache import njit

__all__ = [
    "GEMV_ROWS_MAX", "call_gemm_build", "fill_gemm_slot", "gemm_by_blas", "gemm_by_blas_in_tiles", "gemm_by_loops_or_blas",
]  # fmt: skip

# The chosen library's Fortran sgemm/dgemm, linked by name (numdiff.kernels._blas_library):
# (transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc), every argument by address.
_FORTRAN_GEMM = types.void(*(types.voidptr,) * 13)
_SGEMM = types.ExternalFunction(GEMM_SYMBOLS["s"], _FORTRAN_GEMM)
_DGEMM = types.ExternalFunction(GEMM_SYMBOLS["d"], _FORTRAN_GEMM)
# Its sgemv/dgemv: (trans, m, n, alpha, a, lda, x, incx, beta, y, incy), every argument by address.
_FORTRAN_GEMV = types.void(*(types.voidptr,) * 11)
_SGEMV = types.ExternalFunction(GEMV_SYMBOLS["s"], _FORTRAN_GEMV)
_DGEMV = types.ExternalFunction(GEMV_SYMBOLS["d"], _FORTRAN_GEMV)

_NOTRANS, _TRANS = ord("n"), ord("t")

GEMV_ROWS_MAX = 4
"""A product ``a @ b.T`` with at most this many rows of c runs as one gemv per row: a Linear on a
few samples. Measured (2026-12-06, one thread, SciPy's OpenBLAS with its Haswell kernels, GFLOP/s
gemv per row / one sgemm / torch.mm): 2x784x128 59 / 11 / 37, 4x784x128 60 / 24 / 50; at 8 rows
neither won (8x512x512 53 / 39 / 59, 8x4096x1024 29 / 37 / 40)."""


@intrinsic
def _data_ptr(typingctx, arr):
    """The data pointer of an array (view), as ``void*``."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(arr)(context, builder, args[0])
        return builder.bitcast(ary.data, cgutils.voidptr_t)

    return types.voidptr(arr), codegen


@njit(cache=True, nogil=True)
def _leading_dim(x):
    """Row stride in elements of a row-major 2-D view (BLAS wants at least max(1, cols))."""
    ld = x.strides[0] // x.itemsize
    if ld < x.shape[1]:
        ld = x.shape[1]
    if ld < 1:
        ld = 1
    return ld


@njit(cache=True, nogil=True)
def _checks_or_small(trans_a, trans_b, alpha, a, b, beta, c):
    """gemm's checks (ValueError on shapes that do not match or a last axis that is not unit
    stride), then the products that need no GEMM: an empty c, K = 0 (c = beta * c) and a one-row
    or one-column c (:func:`_gemv`). True when c is written."""
    m, n = c.shape
    k = a.shape[0] if trans_a else a.shape[1]
    if (a.shape[1] if trans_a else a.shape[0]) != m or (b.shape[1] if trans_b else b.shape[0]) != k:
        raise ValueError("gemm: operand shapes do not match the output")
    if (b.shape[0] if trans_b else b.shape[1]) != n:
        raise ValueError("gemm: operand shapes do not match the output")
    if m == 0 or n == 0:
        return True
    if k == 0:
        for i in range(m):
            for j in range(n):
                c[i, j] = 0 if beta == 0 else beta * c[i, j]
        return True
    size = c.itemsize
    if (
        (a.shape[1] > 1 and a.strides[1] != size)
        or (b.shape[1] > 1 and b.strides[1] != size)
        or (c.shape[1] > 1 and c.strides[1] != size)
    ):
        raise ValueError("gemm: every operand needs unit stride along its last axis")
    if m == 1 or n == 1:
        _gemv(trans_a, trans_b, alpha, a, b, beta, c)
        return True
    return False


@njit(cache=True, nogil=True)
def _blas_product(trans_a, trans_b, alpha, a, b, beta, c):
    """The product of at least 2 x 2 checked by :func:`_checks_or_small`: ``a @ b.T`` with at most
    :data:`GEMV_ROWS_MAX` rows as one gemv a row, the rest one BLAS gemm."""
    if trans_b and c.shape[0] <= GEMV_ROWS_MAX:
        _gemv_rows(trans_a, alpha, a, b, beta, c)
    else:
        _blas_gemm(trans_a, trans_b, alpha, a, b, beta, c)


@njit(cache=True, nogil=True)
def _blas_product_in_tiles(trans_a, trans_b, alpha, a, b, beta, c):
    """:func:`_blas_product`, with products of few rows or few columns cut into tiles for OpenBLAS's
    small-matrix kernels (numdiff.kernels._gemm_tiles: tile_shape, column_tile_shape), each tile one BLAS gemm."""
    m, n = c.shape
    k = a.shape[0] if trans_a else a.shape[1]
    rows, by_rows = m, False
    columns, depth = tile_shape(trans_a, trans_b, m, n, k, c.itemsize)
    if columns == 0:
        rows, depth = column_tile_shape(trans_a, trans_b, m, n, k, c.itemsize)
        columns, by_rows = n, True
    if depth == 0:
        _blas_product(trans_a, trans_b, alpha, a, b, beta, c)
        return
    # Few columns of a @ b.T: b (N x K) is small, and a @ (b.T copied) is a product the permit takes in
    # any size (numdiff.kernels._gemm_tiles.column_tile_shape). One loop and one BLAS call site serve
    # both kinds of tile: a second copy of either cost seconds of the build's empty-cache compile.
    copied = by_rows and trans_b
    b_tiles = _as_operand(_transposed_copy(b)) if copied else b
    trans_b_tiles = trans_b and not copied
    # Columns innermost: a row tile's block of op(a) (every row by one depth) stays in L1 across the blocks
    # of columns. With the depth innermost instead, every block of columns read all of op(a) again, from
    # L3 once it outgrew L2: 128x4096x512 a.T @ b took 1.53x torch's time that way, 1.12x this way. Each
    # element of c still sums its tiles in order of K, so the result is the same to the bit.
    for i0 in range(0, m, rows):
        i1 = min(m, i0 + rows)
        for k0 in range(0, k, depth):
            k1 = min(k, k0 + depth)
            beta_tile = beta if k0 == 0 else 1.0
            a_tile = a[k0:k1, i0:i1] if trans_a else a[i0:i1, k0:k1]
            for j0 in range(0, n, columns):
                j1 = min(n, j0 + columns)
                b_tile = b_tiles[j0:j1, k0:k1] if trans_b_tiles else b_tiles[k0:k1, j0:j1]
                _blas_gemm(trans_a, trans_b_tiles, alpha, a_tile, b_tile, beta_tile, c[i0:i1, j0:j1])


@intrinsic
def _as_operand(typingctx, arr):
    """A 2-D array typed as the build's operands are (read-only, any layout), sharing its data: the
    transposed copy of b then takes the same tile loop as b itself."""
    if not isinstance(arr, types.Array) or arr.ndim != 2:
        return None
    operand = types.Array(arr.dtype, 2, "A", readonly=True)

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, operand, args[0])

    return operand(arr), codegen


@njit(cache=True, nogil=True)
def _transposed_copy(b):
    """b.T as a new C-contiguous array: b is the few-column product's small (N, K) operand."""
    n, k = b.shape
    out = np.empty((k, n), b.dtype)
    for j in range(n):
        for kk in range(k):
            out[kk, j] = b[j, kk]
    return out


@njit(cache=True, nogil=True)
def _gemv_rows(trans_a, alpha, a, b, beta, c):
    """``a @ b.T`` as one gemv per row of c."""
    for i in range(c.shape[0]):
        _gemv(trans_a, True, alpha, a[:, i : i + 1] if trans_a else a[i : i + 1], b, beta, c[i : i + 1])


@njit(cache=True, nogil=True)
def _blas_gemm(trans_a, trans_b, alpha, a, b, beta, c):
    """One BLAS sgemm/dgemm on views checked by :func:`_checks_or_small`."""
    m, n = c.shape
    k = a.shape[0] if trans_a else a.shape[1]
    scalars = np.empty(2, c.dtype)
    scalars[0] = alpha
    scalars[1] = beta
    # Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: BLAS sees each row-major
    # array as its transpose, so swap the operands and keep the flags.
    flags = np.empty(2, np.uint8)
    flags[0] = _TRANS if trans_b else _NOTRANS
    flags[1] = _TRANS if trans_a else _NOTRANS
    dims = np.empty(6, np.int32)
    dims[0], dims[1], dims[2] = n, m, k
    dims[3], dims[4], dims[5] = _leading_dim(b), _leading_dim(a), _leading_dim(c)
    transb, transa = _data_ptr(flags[0:1]), _data_ptr(flags[1:2])
    n_, m_, k_ = _data_ptr(dims[0:1]), _data_ptr(dims[1:2]), _data_ptr(dims[2:3])
    ldb, lda, ldc = _data_ptr(dims[3:4]), _data_ptr(dims[4:5]), _data_ptr(dims[5:6])
    alpha_, beta_ = _data_ptr(scalars[0:1]), _data_ptr(scalars[1:2])
    b_, a_, c_ = _data_ptr(b), _data_ptr(a), _data_ptr(c)
    if c.itemsize == 4:
        _SGEMM(transb, transa, n_, m_, k_, alpha_, b_, ldb, a_, lda, beta_, c_, ldc)
    else:
        _DGEMM(transb, transa, n_, m_, k_, alpha_, b_, ldb, a_, lda, beta_, c_, ldc)


@njit(cache=True, nogil=True)
def gemm_by_blas(trans_a, trans_b, alpha, a, b, beta, c):
    """numdiff.kernels._blas.gemm on the BLAS route: every product by BLAS."""
    if not _checks_or_small(trans_a, trans_b, alpha, a, b, beta, c):
        _blas_product(trans_a, trans_b, alpha, a, b, beta, c)


@njit(cache=True, nogil=True)
def gemm_by_blas_in_tiles(trans_a, trans_b, alpha, a, b, beta, c):
    """numdiff.kernels._blas.gemm on the BLAS route where OpenBLAS has small-matrix kernels: every
    product by BLAS, those with few rows or few columns of c in tiles (numdiff.kernels._gemm_tiles)."""
    if not _checks_or_small(trans_a, trans_b, alpha, a, b, beta, c):
        _blas_product_in_tiles(trans_a, trans_b, alpha, a, b, beta, c)


@njit(cache=True, nogil=True)
def gemm_by_loops_or_blas(trans_a, trans_b, alpha, a, b, beta, c):
    """numdiff.kernels._blas.gemm on the loops route: loop_gemm where loops_suit says it beats
    BLAS, BLAS otherwise."""
    if _checks_or_small(trans_a, trans_b, alpha, a, b, beta, c):
        return
    k = a.shape[0] if trans_a else a.shape[1]
    if loops_suit(trans_a, trans_b, c.shape[0], k):
        loop_gemm(trans_a, trans_b, alpha, a, b, beta, c)
    else:
        _blas_product(trans_a, trans_b, alpha, a, b, beta, c)


@njit(cache=True, nogil=True)
def _gemv(trans_a, trans_b, alpha, a, b, beta, c):
    """gemm for a one-row or one-column c, as one BLAS gemv: the product is a matrix times a
    vector, and sgemm would pack the whole matrix first (a Linear on one sample, 1 x 185 by 185 x 128:
    ~18 us of CPU in sgemm against ~4 in sgemv). c (1, N): the vector is op(a)'s row, the matrix
    op(b); c (M, 1): the vector is op(b)'s column, the matrix op(a). Shapes and strides as gemm checked.
    """
    m, n = c.shape
    size = c.itemsize
    # A row-major (R, C) array is BLAS's column-major (C, R) with leading dimension ld: product with
    # the vector over its R axis is gemv "N" on (C, R), over its C axis gemv "T" on (C, R).
    if m == 1:  # y = c[0, :] (N,), x = op(a)[0, :] (K,), matrix op(b) (K, N)
        matrix, over_columns = b, trans_b  # b (N, K) row-major: c[j] = sum_k b[j, k] x[k]
        x_stride = a.strides[0] // size if trans_a else 1
        y_stride = 1
        y = c
        x = a
    else:  # y = c[:, 0] (M,), x = op(b)[:, 0] (K,), matrix op(a) (M, K)
        matrix, over_columns = a, not trans_a  # a (M, K) row-major: c[i] = sum_k a[i, k] x[k]
        x_stride = 1 if trans_b else b.strides[0] // size
        y_stride = c.strides[0] // size
        y = c
        x = b
    if x_stride < 1:
        x_stride = 1
    if y_stride < 1:
        y_stride = 1
    scalars = np.empty(2, c.dtype)
    scalars[0] = alpha
    scalars[1] = beta
    flags = np.empty(1, np.uint8)
    flags[0] = _TRANS if over_columns else _NOTRANS
    dims = np.empty(5, np.int32)
    dims[0], dims[1] = matrix.shape[1], matrix.shape[0]
    dims[2], dims[3], dims[4] = _leading_dim(matrix), x_stride, y_stride
    trans_, rows_, cols_ = _data_ptr(flags[0:1]), _data_ptr(dims[0:1]), _data_ptr(dims[1:2])
    ld_, incx_, incy_ = _data_ptr(dims[2:3]), _data_ptr(dims[3:4]), _data_ptr(dims[4:5])
    alpha_, beta_ = _data_ptr(scalars[0:1]), _data_ptr(scalars[1:2])
    matrix_, x_, y_ = _data_ptr(matrix), _data_ptr(x), _data_ptr(y)
    if size == 4:
        _SGEMV(trans_, rows_, cols_, alpha_, matrix_, ld_, x_, incx_, beta_, y_, incy_)
    else:
        _DGEMV(trans_, rows_, cols_, alpha_, matrix_, ld_, x_, incx_, beta_, y_, incy_)


_SCALARS = {np.dtype(np.float32): types.float32, np.dtype(np.float64): types.float64}


def _argument_types(scalar: types.Float) -> tuple:
    """The one signature of a build: flags, alpha, op(a) and op(b) read-only any-layout views, beta, c."""
    operand = types.Array(scalar, 2, "A", readonly=True)
    return (types.boolean, types.boolean, types.float64, operand, operand, types.float64, types.Array(scalar, 2, "A"))


_SLOTS = {
    scalar: KernelSlot(
        f"numdiff_gemm_build_{scalar}",
        f"gemm: no {scalar} build in this process yet; call numdiff.kernels._blas.prepare_blas({scalar}) before "
        f"running compiled code that multiplies {scalar} matrices",
    )
    for scalar in _SCALARS.values()
}


def fill_gemm_slot(dtype: np.dtype, loops: bool, tiles: bool = False) -> Dispatcher:
    """Build gemm for `dtype` (float32 or float64): :func:`gemm_by_loops_or_blas` where `loops`, else
    :func:`gemm_by_blas_in_tiles` where `tiles`, else :func:`gemm_by_blas`,
    compiled or loaded from the disk cache, and put it where :func:`call_gemm_build` calls it.
    Returns the one it built."""
    scalar = _SCALARS[np.dtype(dtype)]
    if loops:
        build = gemm_by_loops_or_blas
    else:
        build = gemm_by_blas_in_tiles if tiles else gemm_by_blas
    _SLOTS[scalar].fill(build, _argument_types(scalar))
    return build


@intrinsic
def call_gemm_build(typingctx, trans_a, trans_b, alpha, a, b, beta, c):
    """Inside compiled code: gemm(trans_a, trans_b, alpha, a, b, beta, c) by this process's build for
    c's dtype (:func:`fill_gemm_slot`; RuntimeError if none is there yet). a, b and c are 2-D arrays
    of one dtype, float32 or float64, of any layout."""
    arrays = (a, b, c)
    if not all(isinstance(x, types.Array) and x.ndim == 2 for x in arrays):
        return None
    scalar = c.dtype
    if scalar not in _SLOTS or a.dtype != scalar or b.dtype != scalar:
        return None
    slot = _SLOTS[scalar]

    def codegen(context, builder, signature, args):
        call_through_slot(context, builder, slot, signature, args)
        return context.get_dummy_value()

    return types.none(*_argument_types(scalar)), codegen
