"""A general matrix product in Numba loops, for CPUs whose BLAS runs kernels narrower than their vectors.

:func:`loop_gemm` computes ``c = alpha * op(a) @ op(b) + beta * c`` with the shapes, flags and
scalars of numdiff.kernels._blas.gemm, which calls it in place of BLAS where this process's route
says so (numdiff.kernels._gemm_route). numdiff.kernels._conv_products runs :func:`accumulate`, its
inner loop nest, for the im2col convolution cores.

Loop nest. op(b) is cut into blocks of at most ``KC`` of its rows (the inner dimension) by
:func:`panel_columns` of its columns, and each block is packed into one contiguous buffer (op(b)
transposed or not; the copy is K*N elements against M*K*N multiply-adds). For each block,
:func:`accumulate` runs over all of c's rows: 4 rows of c by 4 steps of K at a time, the 16 values
of alpha * op(a) in registers, while the innermost loop runs along the block's columns: 4 loads of
the packed block and 4 loads and stores of c feed 16 multiply-adds per vector, which LLVM
vectorises 512 bits wide where the core has AVX-512 (numdiff.kernels._vecmath.wide_vectors), with
fused multiply-adds (``fastmath={"contract"}``: each term rounded once, as BLAS kernels do). The
block (``PANEL_BYTES``) stays in the core's L2 cache while every row of c passes over it, and the
4 rows of c being updated stay in L1. op(a) is read in place, element by element, so a transposed
a costs nothing. Extra memory: the packed block, at most ``PANEL_BYTES``. Runs on the calling
thread; numdiff.kernels._blas.gemm_parallel splits a product across threads by rows or columns.

Summation order differs from BLAS's: results agree with it within the dtype's rounding over K terms.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from numdiff.kernels._kernel_address import by_address
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath import wide_vectors

__all__ = ["KC", "PANEL_BYTES", "accumulate", "accumulate_as_gemm", "dot_rows", "loop_gemm", "loops_suit", "one_like", "panel_columns"]

KC = 256
PANEL_BYTES = 1 << 19
"""Largest packed block of op(b), in rows of the inner dimension and in bytes."""
PACK_MIN_ROWS = 64
"""op(b) is packed when c has at least this many rows (or b is transposed); for fewer, the copy
costs more than reading b's rows in place saves (16x128x512: 167 GFLOP/s in place, 71 packed)."""
TRANSPOSED_B_MIN_ROWS = 256
"""With b transposed the packing is a transposing copy, ~0.7 ns an element, which the product
repays only over enough rows of c: fewer, and :func:`loop_gemm` takes ``a @ b.T`` as dot products
(:func:`dot_rows`), or :func:`loops_suit` leaves it to BLAS."""
SHORT_K_PACKED_MIN_ROWS = 128
"""Fewest rows of c over which the packed nest repays its transposing copy for ``a @ b.T`` with a K
too short for :func:`dot_rows` (float32, time over torch.mm's, packed / BLAS: 128x64x256 0.83 / 0.97,
192x32x512 0.73 / 0.94, 255x80x512 0.67 / 0.91; with 64 rows 1.21 / 1.03)."""
UNTRANSPOSED_MAX_ROWS = 32
"""Most rows of c for which :func:`loop_gemm` takes ``a @ b`` or ``a.T @ b`` from BLAS. Measured
with the machine otherwise quiet (one thread, wall clock, loops / BLAS with the Haswell kernels):
4-32 rows win (4x512x512 0.18, 16x784x128 0.52, 32x512x512 0.66, 32x1024x1024 0.97); from 64 rows
BLAS wins at every shape measured (64x784x128 1.28, 256x512x64 2.07, 1024x1024x32 1.94, 1024^3
nn 1.7, 8192x576x64 1.99), and 2-4x where c is narrow (1024x1024x7 3.4: the loops vectorise along
N). Measured under load 13-18 (eight engineers on two cores) the packed nest had looked faster
than BLAS on large products; on a quiet machine BLAS's kernels run near their peak and it is not.
``a @ b.T`` with 256 rows or more (a transposing copy, then the packed nest) loses the same way
(256x512x128 nt 1.98), and so does the packed nest for 128-255 rows with a short K."""
DOT_MIN_DEPTH = 96
DOT_MIN_DEPTH_FEW_ROWS = 64
"""Shortest inner dimension for which :func:`dot_rows` beats BLAS's pre-AVX-512 sgemm (with fewer than
PACK_MIN_ROWS rows of c, the second): each 4 x 4 block of c ends in 16 sums across vector lanes,
which a short K does not repay (float32, time over torch.mm's: 16x64x256 1.09 against BLAS's 1.44,
64x64x256 1.15 against 1.04, 64x96x512 0.89 against 1.02, 128x32x512 1.81 against 0.97)."""
DOT_MIN_ROWS = 4
"""Fewest rows of c for :func:`dot_rows` over one BLAS gemv a row (numdiff.kernels._blas.gemm): with
4 a block of rows reads b once where the gemvs read it 4 times (float32 4x1024x1024: 0.35 of
torch.mm's time, the gemvs 0.88); with 2 or 3 every row reads b on its own either way."""
DOT_BLOCK_BYTES = 1 << 18
"""Rows of b that :func:`dot_rows` runs every row of a over, in bytes: they stay in the L2 cache."""


def _same_memory_as(retyped):
    """The codegen of an intrinsic that returns its array argument typed as `retyped`: the same
    memory, shape and strides (borrowed), only the Numba type differs."""

    def codegen(context, builder, signature, args):
        source = context.make_array(signature.args[0])(context, builder, args[0])
        view = context.make_array(retyped)(context, builder)
        for field in ("meminfo", "parent", "nitems", "itemsize", "data", "shape", "strides"):
            setattr(view, field, getattr(source, field))
        return impl_ret_borrowed(context, builder, retyped, view._getvalue())

    return codegen


@intrinsic
def _unit_stride(typingctx, row):
    """The 1-D view `row` typed as contiguous (layout "C"), for a row the caller has checked to
    have unit stride: a row of a strided 2-D view (a tile of an output plane) is typed "A", and
    LLVM does not vectorise a loop over it whose stride is only known at run time (measured: the
    forward of conv2d 32->64, 16x16 to 8x8, 5x slower than over contiguous rows)."""
    if not (isinstance(row, types.Array) and row.ndim == 1):
        return None
    contiguous = row.copy(layout="C")
    return contiguous(row), _same_memory_as(contiguous)


@intrinsic
def one_like(typingctx, array):
    """1 in `array`'s element type, as a constant of the compiled code: an alpha for
    :func:`accumulate` that keeps float32 multiply-adds in float32, without allocating."""
    if not isinstance(array, types.Array):
        return None

    def codegen(context, builder, signature, args):
        return context.get_constant(array.dtype, 1)

    return array.dtype(array), codegen


@intrinsic
def _read_only(typingctx, matrix):
    """The 2-D array `matrix` typed as a read-only view of any layout, as op(b) arrives from the
    caller: :func:`accumulate` then runs one compiled version for packed blocks and for b read in
    place (each version cost ~1.5 s of compilation on an empty cache)."""
    if not (isinstance(matrix, types.Array) and matrix.ndim == 2):
        return None
    viewed = matrix.copy(layout="A", readonly=True)
    return viewed(matrix), _same_memory_as(viewed)


@intrinsic
def _any_layout(typingctx, matrix):
    """The 2-D array `matrix` typed as a writable view of any layout, as loop_gemm's blocks of c
    arrive at :func:`accumulate` (see :func:`accumulate_as_gemm`)."""
    if not (isinstance(matrix, types.Array) and matrix.ndim == 2):
        return None
    viewed = matrix.copy(layout="A", readonly=False)
    return viewed(matrix), _same_memory_as(viewed)


@intrinsic
def _not_inlined(typingctx):
    """Keep the compiled function this call sits in out of its callers; returns None. Inlined
    into a core, the product loop lost its 512-bit vectors (wide_vectors marks the function, not
    the loop) and ran at half its rate (conv2d 32->64, 16x16 to 8x8: 1.67 ms, kept apart 1.0)."""

    def codegen(context, builder, signature, args):
        builder.function.attributes.add("noinline")
        return context.get_dummy_value()

    return types.none(), codegen


@by_address
@njit(cache=True, nogil=True, fastmath={"contract"})
def accumulate(a, b, alpha, c):
    """``c (M, N) += alpha * a (M, K) @ b (K, N)``; b and c unit stride along their rows, a any strides,
    alpha a scalar of c's dtype.

    Loop nest: blocks of 4 rows of c x 4 steps of K (then the leftover rows one at a time, and
    the leftover steps one at a time), innermost a vectorised loop over N. No blocking of K for
    the cache: blocks of at most 64 Ki elements of b ran 1.5-2x slower on every product measured,
    the 256x8192x128 one (b 4 MiB) included (121 -> 81 GFLOP/s)."""
    wide_vectors()
    _not_inlined()
    m, depth = a.shape
    n = c.shape[1]
    rows4 = m - m % 4
    depth4 = depth - depth % 4
    for i in range(0, rows4, 4):
        c0, c1, c2, c3 = _unit_stride(c[i]), _unit_stride(c[i + 1]), _unit_stride(c[i + 2]), _unit_stride(c[i + 3])
        for k in range(0, depth4, 4):
            a00, a01 = alpha * a[i, k], alpha * a[i, k + 1]
            a02, a03 = alpha * a[i, k + 2], alpha * a[i, k + 3]
            a10, a11 = alpha * a[i + 1, k], alpha * a[i + 1, k + 1]
            a12, a13 = alpha * a[i + 1, k + 2], alpha * a[i + 1, k + 3]
            a20, a21 = alpha * a[i + 2, k], alpha * a[i + 2, k + 1]
            a22, a23 = alpha * a[i + 2, k + 2], alpha * a[i + 2, k + 3]
            a30, a31 = alpha * a[i + 3, k], alpha * a[i + 3, k + 1]
            a32, a33 = alpha * a[i + 3, k + 2], alpha * a[i + 3, k + 3]
            b0, b1, b2, b3 = _unit_stride(b[k]), _unit_stride(b[k + 1]), _unit_stride(b[k + 2]), _unit_stride(b[k + 3])
            for j in range(n):
                x0, x1, x2, x3 = b0[j], b1[j], b2[j], b3[j]
                c0[j] += a00 * x0 + a01 * x1 + a02 * x2 + a03 * x3
                c1[j] += a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3
                c2[j] += a20 * x0 + a21 * x1 + a22 * x2 + a23 * x3
                c3[j] += a30 * x0 + a31 * x1 + a32 * x2 + a33 * x3
        for k in range(depth4, depth):
            a0, a1, a2, a3 = alpha * a[i, k], alpha * a[i + 1, k], alpha * a[i + 2, k], alpha * a[i + 3, k]
            bk = _unit_stride(b[k])
            for j in range(n):
                x = bk[j]
                c0[j] += a0 * x
                c1[j] += a1 * x
                c2[j] += a2 * x
                c3[j] += a3 * x
    for i in range(rows4, m):
        ci = _unit_stride(c[i])
        for k in range(0, depth4, 4):
            a0, a1, a2, a3 = alpha * a[i, k], alpha * a[i, k + 1], alpha * a[i, k + 2], alpha * a[i, k + 3]
            b0, b1, b2, b3 = _unit_stride(b[k]), _unit_stride(b[k + 1]), _unit_stride(b[k + 2]), _unit_stride(b[k + 3])
            for j in range(n):
                ci[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j]
        for k in range(depth4, depth):
            ak = alpha * a[i, k]
            bk = _unit_stride(b[k])
            for j in range(n):
                ci[j] += ak * bk[j]


@njit(cache=True, nogil=True, inline="always")
def accumulate_as_gemm(a, b, c):
    """``c (M, N) += a (M, K) @ b (K, N)`` by :func:`accumulate`, its operands typed as
    :func:`loop_gemm` passes them (a and b read-only, all three of any layout; alpha 1 in c's
    dtype): one compiled accumulate per dtype serves the GEMM and the recurrent steps, where each
    caller's own layouts compiled one more (~1 s of CPU time each on an empty cache; the char
    LSTM's first call compiled three). Only the types change: the memory, shapes and strides are
    the arrays' own, and accumulate reads a element by element and b and c along unit-stride rows
    whatever their layout type."""
    accumulate(_read_only(a), _read_only(b), one_like(c), _any_layout(c))


@njit(cache=True, nogil=True, inline="always")
def panel_columns(k, n, itemsize):
    """Columns of op(b) per packed block: all n when a block of min(k, KC) rows of them fits in
    PANEL_BYTES, else as many as fit, rounded down to a multiple of 16 (at least 16)."""
    rows = min(k, KC)
    fit = PANEL_BYTES // (rows * itemsize)
    if n <= fit:
        return n
    return max(16, fit - fit % 16)


@njit(cache=True, nogil=True, inline="always")
def loops_suit(trans_a, trans_b, m, depth):
    """Whether :func:`loop_gemm` beats BLAS's pre-AVX-512 kernels on a product with m rows of c and
    inner dimension depth: op(b) untransposed with at most UNTRANSPOSED_MAX_ROWS rows, or ``a @ b.T``
    with fewer than TRANSPOSED_B_MIN_ROWS rows and a K long enough for :func:`dot_rows`."""
    if not trans_b:
        return m <= UNTRANSPOSED_MAX_ROWS
    if trans_a or m >= TRANSPOSED_B_MIN_ROWS or m < DOT_MIN_ROWS:
        return False
    return depth >= DOT_MIN_DEPTH or (m < PACK_MIN_ROWS and depth >= DOT_MIN_DEPTH_FEW_ROWS)


@njit(cache=True, nogil=True)
def loop_gemm(trans_a, trans_b, alpha, a, b, beta, c):
    """``c = alpha * op(a) @ op(b) + beta * c`` by the loop nest of the module docstring.

    ``op(x)`` is ``x.T`` where the flag is set. Shapes: op(a) (M, K), op(b) (K, N), c (M, N), all
    at least 1, checked by the caller (numdiff.kernels._blas.gemm) along with c's unit stride
    along its rows; a and b any strides. ``beta == 0`` overwrites c without reading it.
    ``a @ b.T`` with fewer than TRANSPOSED_B_MIN_ROWS rows, a and b unit stride along K, runs as
    :func:`dot_rows` instead, unless its K is shorter than DOT_MIN_DEPTH and it has at least
    SHORT_K_PACKED_MIN_ROWS rows.
    """
    m, n = c.shape
    depth = a.shape[0] if trans_a else a.shape[1]
    dots = m < SHORT_K_PACKED_MIN_ROWS or depth >= DOT_MIN_DEPTH
    if trans_b and not trans_a and m < TRANSPOSED_B_MIN_ROWS and dots and alpha != 0:
        if (depth == 1 or a.strides[1] == a.itemsize) and (depth == 1 or b.strides[1] == b.itemsize):
            dot_rows(alpha, a, b, beta, c)
            return
    for i in range(m):
        row = c[i]
        if beta == 0:
            for j in range(n):
                row[j] = 0
        elif beta != 1:
            for j in range(n):
                row[j] *= beta
    if alpha == 0:
        return
    rows_a = a.T if trans_a else a
    scale = np.empty(1, c.dtype)
    scale[0] = alpha  # in c's dtype: a float64 alpha would turn float32 multiply-adds into float64 ones
    kc = min(depth, KC)
    nc = panel_columns(depth, n, c.itemsize)
    pack = trans_b or m >= PACK_MIN_ROWS
    panel = np.empty(kc * nc if pack else 0, c.dtype)
    for k0 in range(0, depth, kc):
        kd = min(kc, depth - k0)
        for j0 in range(0, n, nc):
            nd = min(nc, n - j0)
            if pack:
                block = panel[: kd * nd].reshape((kd, nd))
                if trans_b:
                    # Strips of 16 columns: a strip's rows in the block are 16 elements of one cache
                    # line, where writing whole columns (rows of b) one after another touched kd
                    # lines N elements apart, which share few L1 sets (0.7 ns an element here, 3.5).
                    for strip in range(0, nd, 16):
                        for k in range(kd):
                            packed = block[k]
                            for j in range(strip, min(strip + 16, nd)):
                                packed[j] = b[j0 + j, k0 + k]
                else:
                    for k in range(kd):
                        row = _unit_stride(b[k0 + k])
                        packed = block[k]
                        for j in range(nd):
                            packed[j] = row[j0 + j]
                accumulate(rows_a[:, k0 : k0 + kd], _read_only(block), scale[0], c[:, j0 : j0 + nd])
            else:
                accumulate(rows_a[:, k0 : k0 + kd], b[k0 : k0 + kd, j0 : j0 + nd], scale[0], c[:, j0 : j0 + nd])


@njit(cache=True, nogil=True, fastmath={"contract", "reassoc"})
def dot_rows(alpha, a, b, beta, c):
    """``c (M, N) = alpha * a (M, K) @ b (N, K).T + beta * c``: every element of c a dot product of a
    row of a with a row of b, both read in place along K (unit stride), where :func:`loop_gemm`'s
    packed nest would first copy b transposed. ``beta == 0`` overwrites c without reading it.

    Loop nest: blocks of DOT_BLOCK_BYTES of b's rows (they stay in L2 while every row of a passes
    over them); in a block, 4 rows of a x 4 rows of b at a time (then 1 x 4, 4 x 1, 1 x 1 for the
    leftovers), innermost a loop over K keeping 16 sums. ``reassoc`` lets LLVM vectorise that loop
    512 bits wide with a vector of partial sums per element of c, added across lanes once at the
    end; per step 8 loads feed 16 fused multiply-adds. Runs on the calling thread; no extra memory.
    Measured (float32, one thread, time over torch.mm's; BLAS's before): 16x128x512 0.73 (1.52),
    64x1024x1024 0.54 (1.01), 128x784x128 0.66 (0.97), 255x512x512 0.63 (0.81); float64
    16x512x512 0.54 (1.06). Dot products with K shorter than DOT_MIN_DEPTH lose to BLAS (loops_suit).
    """
    wide_vectors()
    _not_inlined()
    m, depth = a.shape
    n = b.shape[0]
    zero = c.dtype.type(0)
    rows_a4 = m - m % 4
    block = max(4, DOT_BLOCK_BYTES // (depth * c.itemsize))
    block -= block % 4
    for j0 in range(0, n, block):
        j1 = min(n, j0 + block)
        j4 = j1 - (j1 - j0) % 4
        for i in range(0, rows_a4, 4):
            a0, a1, a2, a3 = _unit_stride(a[i]), _unit_stride(a[i + 1]), _unit_stride(a[i + 2]), _unit_stride(a[i + 3])
            for j in range(j0, j4, 4):
                b0, b1, b2, b3 = _unit_stride(b[j]), _unit_stride(b[j + 1]), _unit_stride(b[j + 2]), _unit_stride(b[j + 3])
                s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = zero
                s20 = s21 = s22 = s23 = s30 = s31 = s32 = s33 = zero
                for k in range(depth):
                    x0, x1, x2, x3 = b0[k], b1[k], b2[k], b3[k]
                    y0, y1, y2, y3 = a0[k], a1[k], a2[k], a3[k]
                    s00, s01, s02, s03 = s00 + y0 * x0, s01 + y0 * x1, s02 + y0 * x2, s03 + y0 * x3
                    s10, s11, s12, s13 = s10 + y1 * x0, s11 + y1 * x1, s12 + y1 * x2, s13 + y1 * x3
                    s20, s21, s22, s23 = s20 + y2 * x0, s21 + y2 * x1, s22 + y2 * x2, s23 + y2 * x3
                    s30, s31, s32, s33 = s30 + y3 * x0, s31 + y3 * x1, s32 + y3 * x2, s33 + y3 * x3
                _store4(alpha, s00, s01, s02, s03, beta, c, i, j)
                _store4(alpha, s10, s11, s12, s13, beta, c, i + 1, j)
                _store4(alpha, s20, s21, s22, s23, beta, c, i + 2, j)
                _store4(alpha, s30, s31, s32, s33, beta, c, i + 3, j)
            for j in range(j4, j1):
                bj = _unit_stride(b[j])
                s0 = s1 = s2 = s3 = zero
                for k in range(depth):
                    x = bj[k]
                    s0, s1, s2, s3 = s0 + a0[k] * x, s1 + a1[k] * x, s2 + a2[k] * x, s3 + a3[k] * x
                _store1(alpha, s0, beta, c, i, j)
                _store1(alpha, s1, beta, c, i + 1, j)
                _store1(alpha, s2, beta, c, i + 2, j)
                _store1(alpha, s3, beta, c, i + 3, j)
        for i in range(rows_a4, m):
            ai = _unit_stride(a[i])
            for j in range(j0, j4, 4):
                b0, b1, b2, b3 = _unit_stride(b[j]), _unit_stride(b[j + 1]), _unit_stride(b[j + 2]), _unit_stride(b[j + 3])
                s0 = s1 = s2 = s3 = zero
                for k in range(depth):
                    y = ai[k]
                    s0, s1, s2, s3 = s0 + y * b0[k], s1 + y * b1[k], s2 + y * b2[k], s3 + y * b3[k]
                _store4(alpha, s0, s1, s2, s3, beta, c, i, j)
            for j in range(j4, j1):
                bj = _unit_stride(b[j])
                s = zero
                for k in range(depth):
                    s += ai[k] * bj[k]
                _store1(alpha, s, beta, c, i, j)


@njit(cache=True, nogil=True, inline="always")
def _store1(alpha, total, beta, c, i, j):
    """``c[i, j] = alpha * total + beta * c[i, j]``, not reading c where beta is 0."""
    c[i, j] = alpha * total if beta == 0 else alpha * total + beta * c[i, j]


@njit(cache=True, nogil=True, inline="always")
def _store4(alpha, t0, t1, t2, t3, beta, c, i, j):
    """:func:`_store1` for ``c[i, j : j + 4]``."""
    _store1(alpha, t0, beta, c, i, j)
    _store1(alpha, t1, beta, c, i, j + 1)
    _store1(alpha, t2, beta, c, i, j + 2)
    _store1(alpha, t3, beta, c, i, j + 3)
