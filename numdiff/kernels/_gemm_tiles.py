"""Products with few rows or few columns of c, cut into tiles that OpenBLAS runs on its small-matrix kernels.

SciPy's OpenBLAS, running its SkylakeX-family kernels (cores ``SkylakeX``, ``Cooperlake``,
``SapphireRapids``), computes an sgemm whose M*N*K is at most :data:`SMALL_MNK` (1e6) in "small matrix"
kernels that read the operands in place: 16-64 columns of op(b) in vector registers times 1-4
broadcast elements of op(a), the whole inner dimension in registers, no packing. Above that size it
packs both operands for its 16 x 4 kernel, and with few rows of c the packing is not repaid: 16x128x784
``a @ b`` ran at 38-77 GFLOP/s against torch's (MKL) 85-177. The permit (OpenBLAS's
``sgemm_small_kernel_permit_skylakex.c``) takes any product ``a @ b`` and ``a.T @ b`` that small, ``a @ b.T``
only when c has at most 1200 elements and K is at least 32, and never ``a.T @ b.T``.

So for c with :data:`TILE_ROWS_MIN` to :data:`TILE_ROWS_MAX` rows, :func:`tile_shape` cuts a larger
product into tiles under the permit, every row of c at once: ``a @ b`` and ``a.T @ b`` into blocks of
:data:`TILE_DEPTH_BYTES` of the inner dimension (64 float32) by as many columns as the size allows (a multiple of 16),
``a @ b.T`` into blocks of c of at most 1200 elements with as much of K as the size allows. Tiles along
K accumulate into c with beta = 1, so the sum over K is split into blocks as in any blocked GEMM: the
result differs from one sgemm's by float32 rounding only.

Measured (2026-12-07, Emerald Rapids, one thread, thread CPU time, load 13; GFLOP/s one sgemm / tiles /
torch.mm): 8x512x512 nn 24 / 79 / 76, tn 27 / 62 / 65, nt 24 / 97 / 51; 16x128x784 nn 38 / 92 / 85;
16x784x128 nt 49 / 115 / 64; 32x784x512 nn 47 / 96 / 80, tn 46 / 99 / 79, nt 61 / 99 / 100; 64x784x512
nn 53 / 98 / 95, tn 40 / 100 / 101, nt 81 / 106 / 92. With 96-128 rows ``a @ b`` and ``a @ b.T`` tiles lost
about as often as they won (128x784x512 nn 86 / 74, nt 95 / 60; 128x1024x512 nn 126 / 95 / 158, 128x16x784 nn
72 / 117 / 108), while ``a.T @ b`` mostly won (load 16: 128x16x784 86 / 100 / 130, 128x64x784 95 / 114 / 119,
128x560x1000 87 / 99 / 110, 96x512x512 122 / 166 / 179, 128x1024x512 92 / 84 / 117), hence
:data:`TILE_ROWS_MAX` and :data:`TILE_ROWS_MAX_TN`. A depth of 64
against 128: 64x784x512 nn 98 against 68, 64x512x784 tn 132 against 112; equal within the noise
with fewer rows. Over a Linear layer's three products on 11 training shapes (``bench_gemm.py --training``,
load 15-17) one sgemm each took 1.12x torch's time (geometric mean; nn 1.24), this route 0.99x (nn 1.05),
and 25 of the 33 products came within 1.10x against 17. Whether the process's OpenBLAS has these kernels is
numdiff.kernels._gemm_route's ``tiles`` flag.

Few columns are the same problem turned over (OpenBLAS, column-major, sees a row-major c of few columns as one of
few rows): a GCN's ``A_hat @ H`` and ``A_hat.T @ G`` with 7-32 features, a Linear with few outputs. One sgemm packs
all of the tall operand for a few columns of work: 1024x1024x7 ``a @ b`` took 2.0-2.2x torch's time, ``a.T @ b``
2.0x, 1024x32x7 ``a @ b.T`` 2.2x. :func:`column_tile_shape` cuts c of at most :data:`TILE_COLUMNS_MAX` columns
into blocks of rows, every column at once: ``a @ b`` along K as far as keeps the tile of b in L1
(:data:`COLUMN_TILE_B_ELEMENTS`), ``a.T @ b`` in blocks of :data:`COLUMN_TILE_DEPTH_TN` of K with as many rows as
the size allows (its small kernel reads a across rows: 1024x1024x32 ran 66 GFLOP/s with the whole K a tile,
129 with 64 of it), and ``a @ b.T`` as ``a @ b`` on b copied transposed (N x K, small), since the permit's 1200
outputs would cut it into tiles of 18-37 rows (1024x64x32: 69 GFLOP/s that way, 123-163 copied).
Measured (2026-12-07, one thread, thread CPU time, load 13-17; time over torch.mm, one sgemm / tiles), on 45 shapes
drawn from M 256-4096, K 32-2048, N 2-64: geometric mean nn 1.32 / 0.83-0.89, nt 1.32 / 0.90-0.95, tn 1.44 /
0.82; GCN (``bench_gemm.py --few-cols``): 1024x1024x32 nn 1.27 / 1.01, tn 1.73 / 0.88, 1024x1024x7 nn 1.63 / 0.78,
tn 2.29 / 0.83. Single shapes move by +-0.2 between runs at that load, and with 48-64 columns and K >= 1024
the tiles and one sgemm tie (2048x2048x64 nn 1.14-1.25 either way).

Float64 has the same small-matrix kernels and the same permit (OpenBLAS 0.3.30's ``dgemm_small_matrix_permit``
answers as ``sgemm``'s on every shape tried), and one dgemm loses the same way: 16x784x128 nt took 1.82x torch's
time, 8x512x512 nn 1.91x, 1024x1024x7 nn 3.2x, 1024x32x7 nt 3.2x. Its tiles keep the float32 tiles' sizes in bytes
(:data:`VECTOR_BYTES`, :data:`TILE_DEPTH_BYTES`, :data:`COLUMN_TILE_B_BYTES`, :data:`COLUMN_TILE_DEPTH_TN_BYTES`):
half the elements of depth and of b's tile, columns in multiples of 8. Twice the depth lost on 16x512x128 nn
(1.46 against 1.19) and 128x1024x128 tn (1.16 against 0.87), and the few-column ``a.T @ b`` most of all (2708x2708x16
1.03 against 0.31, 1000x2048x48 1.05 against 0.48). With more rows ``a @ b`` tiles lost where float32's won (64x784x512
nn 1.12 / 1.26, 64x2048x512 nn 1.00 / 1.21), hence :data:`TILE_ROWS_MAX_F64`; ``a.T @ b`` tiles with 96-128
rows brought the slowest dgemms under 1.05 (128x1024x128 1.38 / 1.05, 128x16x784 1.26 / 0.84, 96x1024x384 1.09 /
0.95) and cost a little only where one dgemm was well under torch's time (128x1024x512 0.80 / 0.93, 128x4096x512
0.73 / 0.80). Measured (2026-12-07, one thread, thread CPU time, load 11-13; time over torch.mm,
one dgemm / tiles): 16x128x784 nn 1.61 / 1.01, 128x16x784 tn 1.34 / 0.82, 8x512x512 nn 1.87 / 0.94, 32x784x512
nn 1.24 / 0.88, 48x512x784 nn 1.19 / 1.01, 64x1024x128 tn 1.58 / 1.05; 1024x1024x32 nn 1.53 / 0.95, tn 1.15 /
0.60, 1024x1024x7 tn 2.51 / 0.89, 2708x2708x16 nn 1.79 / 1.02, 4096x512x10 nt 1.89 / 1.06, 1024x784x10 nt
1.92 / 0.95.
"""

from __future__ import annotations

from numdiff.kernels._self_healing_cache import njit

__all__ = [
    "COLUMN_TILE_B_BYTES", "COLUMN_TILE_DEPTH_MIN", "COLUMN_TILE_DEPTH_TN_BYTES", "SMALL_KERNEL_CORES", "SMALL_MNK", "TILE_COLUMNS_MAX",
    "TILE_DEPTH_BYTES", "TILE_ROWS_MAX", "TILE_ROWS_MAX_F64", "TILE_ROWS_MAX_TN", "TILE_ROWS_MIN", "VECTOR_BYTES",
    "column_tile_shape", "most_tile_rows", "tile_shape",
]  # fmt: skip

SMALL_KERNEL_CORES = frozenset({"skylakex", "cooperlake", "sapphirerapids"})
"""OpenBLAS's core names (lower case) whose sgemm has the small-matrix kernels."""
SMALL_MNK = 1_000_000
"""Largest M*N*K that OpenBLAS's permit sends to its small-matrix kernels."""
SMALL_NT_OUTPUTS = 1200
SMALL_NT_MIN_DEPTH = 32
"""``a @ b.T`` goes to the small kernels only with at most this many elements of c and this much K."""
TILE_ROWS_MIN = 8
TILE_ROWS_MAX = 64
TILE_ROWS_MAX_TN = 128
TILE_ROWS_MAX_F64 = 48
"""Rows of c for which a product larger than :data:`SMALL_MNK` is cut into tiles (see the module
docstring), up to :data:`TILE_ROWS_MAX_TN` for ``a.T @ b`` (a weight gradient) and, in float64, up to
:data:`TILE_ROWS_MAX_F64` for the others. With fewer than 8 the small kernels copy op(a) into a buffer of
their own on every call."""
VECTOR_BYTES = 64
"""One AVX-512 register: the tiles' columns are a multiple of its lanes (16 float32, 8 float64)."""
TILE_DEPTH_BYTES = 256
"""Inner-dimension block of the ``a @ b`` and ``a.T @ b`` tiles, in bytes of one row of the block (64 float32)."""
TILE_COLUMNS_MAX = 64
"""Most columns of a c taller than wide that :func:`column_tile_shape` cuts into blocks of rows."""
COLUMN_TILE_B_BYTES = 32768
COLUMN_TILE_DEPTH_MIN = 256
COLUMN_TILE_DEPTH_TN_BYTES = 256
"""Inner-dimension block of the few-column tiles: for ``a @ b`` (and ``a @ b.T``, b copied transposed) as
much of K as keeps the tile of b within :data:`COLUMN_TILE_B_BYTES` (inside a 48 KB L1), at least
:data:`COLUMN_TILE_DEPTH_MIN` rows; for ``a.T @ b``, which reads a across its rows,
:data:`COLUMN_TILE_DEPTH_TN_BYTES` of each column (64 float32, 32 float64)."""


@njit(cache=True, nogil=True, inline="always")
def most_tile_rows(trans_a, trans_b, itemsize):
    """Most rows of c that :func:`tile_shape` cuts into tiles, for elements of `itemsize` bytes (4 or 8)."""
    if trans_a and not trans_b:
        return TILE_ROWS_MAX_TN
    return TILE_ROWS_MAX if itemsize == 4 else TILE_ROWS_MAX_F64


@njit(cache=True, nogil=True, inline="always")
def tile_shape(trans_a, trans_b, m, n, k, itemsize):
    """(columns, depth) of the tiles for an m x n c with inner dimension k and elements of `itemsize`
    bytes (4 or 8), every row at once; (0, 0) where the product stays one gemm (too small to need tiles,
    too many or too few rows, ``a.T @ b.T``, or ``a @ b.T`` with K too short for the small kernels)."""
    lanes = VECTOR_BYTES // itemsize
    too_many_rows = m > most_tile_rows(trans_a, trans_b, itemsize)
    if m < TILE_ROWS_MIN or too_many_rows or m * n * k <= SMALL_MNK or (trans_a and trans_b):
        return 0, 0
    if trans_b:
        if k < SMALL_NT_MIN_DEPTH:
            return 0, 0
        columns = (SMALL_NT_OUTPUTS // m) // lanes * lanes
        return columns, min(k, SMALL_MNK // (m * columns))
    depth = min(k, TILE_DEPTH_BYTES // itemsize)
    return (SMALL_MNK // (m * depth)) // lanes * lanes, depth


@njit(cache=True, nogil=True, inline="always")
def column_tile_shape(trans_a, trans_b, m, n, k, itemsize):
    """(rows, depth) of the tiles for an m x n c, taller than wide, with at most :data:`TILE_COLUMNS_MAX`
    columns, inner dimension k and elements of `itemsize` bytes (4 or 8), every column at once; (0, 0)
    where the product stays one gemm (small enough for the permit, too many columns, not taller than
    wide, or ``a.T @ b.T``). ``a @ b.T`` is tiled as ``a @ (b.T copied)`` whenever the permit refuses it
    whole: its 1200 outputs would leave tiles of a few dozen rows."""
    if n > TILE_COLUMNS_MAX or m <= n or (trans_a and trans_b):
        return 0, 0
    permitted = m * n * k <= SMALL_MNK
    if trans_b:
        permitted = permitted and m * n <= SMALL_NT_OUTPUTS and k >= SMALL_NT_MIN_DEPTH
    if permitted:
        return 0, 0
    if trans_a:
        depth = min(k, COLUMN_TILE_DEPTH_TN_BYTES // itemsize)
        rows = SMALL_MNK // (n * depth)
        return (m if rows >= m else rows // 8 * 8), depth
    depth = min(k, max(COLUMN_TILE_DEPTH_MIN, COLUMN_TILE_B_BYTES // (itemsize * n)))
    rows = SMALL_MNK // (n * depth)
    return (m if rows >= m else rows // 4 * 4), depth
