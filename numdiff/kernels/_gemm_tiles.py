"""Float32 products with few rows or few columns of c, cut into tiles that OpenBLAS runs on its small-matrix kernels.

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
:data:`TILE_DEPTH` of the inner dimension by as many columns as the size allows (a multiple of 16),
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
numdiff.kernels._gemm_route's ``tiles`` flag; float64 has no small-matrix kernels there.

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
"""

from __future__ import annotations

from numdiff.kernels._self_healing_cache import njit

__all__ = [
    "COLUMN_TILE_B_ELEMENTS", "COLUMN_TILE_DEPTH_MIN", "COLUMN_TILE_DEPTH_TN", "SMALL_KERNEL_CORES", "SMALL_MNK", "TILE_COLUMNS_MAX", "TILE_DEPTH",
    "TILE_ROWS_MAX", "TILE_ROWS_MAX_TN", "TILE_ROWS_MIN", "column_tile_shape", "tile_shape",
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
"""Rows of c for which a product larger than :data:`SMALL_MNK` is cut into tiles (see the module
docstring), up to :data:`TILE_ROWS_MAX_TN` for ``a.T @ b`` (a weight gradient); with fewer than 8 the
small kernels copy op(a) into a buffer of their own on every call."""
TILE_DEPTH = 64
"""Inner-dimension block of the ``a @ b`` and ``a.T @ b`` tiles."""
TILE_COLUMNS_MAX = 64
"""Most columns of a c taller than wide that :func:`column_tile_shape` cuts into blocks of rows."""
COLUMN_TILE_B_ELEMENTS = 8192
COLUMN_TILE_DEPTH_MIN = 256
COLUMN_TILE_DEPTH_TN = 64
"""Inner-dimension block of the few-column tiles: for ``a @ b`` (and ``a @ b.T``, b copied transposed) as
much of K as keeps the tile of b within :data:`COLUMN_TILE_B_ELEMENTS` (32 KB of float32, inside a 48 KB L1),
at least :data:`COLUMN_TILE_DEPTH_MIN`; for ``a.T @ b``, which reads a across its rows,
:data:`COLUMN_TILE_DEPTH_TN`."""


@njit(cache=True, nogil=True, inline="always")
def tile_shape(trans_a, trans_b, m, n, k):
    """(columns, depth) of the tiles for an m x n c with inner dimension k, every row at once;
    (0, 0) where the product stays one sgemm (too small to need tiles, too many or too few rows,
    ``a.T @ b.T``, or ``a @ b.T`` with K too short for the small kernels)."""
    most_rows = TILE_ROWS_MAX_TN if trans_a and not trans_b else TILE_ROWS_MAX
    if m < TILE_ROWS_MIN or m > most_rows or m * n * k <= SMALL_MNK or (trans_a and trans_b):
        return 0, 0
    if trans_b:
        if k < SMALL_NT_MIN_DEPTH:
            return 0, 0
        columns = (SMALL_NT_OUTPUTS // m) // 16 * 16
        return columns, min(k, SMALL_MNK // (m * columns))
    depth = min(k, TILE_DEPTH)
    return (SMALL_MNK // (m * depth)) // 16 * 16, depth


@njit(cache=True, nogil=True, inline="always")
def column_tile_shape(trans_a, trans_b, m, n, k):
    """(rows, depth) of the tiles for an m x n c, taller than wide, with at most :data:`TILE_COLUMNS_MAX`
    columns and inner dimension k, every column at once; (0, 0) where the product stays one sgemm (small
    enough for the permit, too many columns, not taller than wide, or ``a.T @ b.T``). ``a @ b.T`` is tiled
    as ``a @ (b.T copied)`` whenever the permit refuses it whole: its 1200 outputs would leave tiles of a
    few dozen rows."""
    if n > TILE_COLUMNS_MAX or m <= n or (trans_a and trans_b):
        return 0, 0
    permitted = m * n * k <= SMALL_MNK
    if trans_b:
        permitted = permitted and m * n <= SMALL_NT_OUTPUTS and k >= SMALL_NT_MIN_DEPTH
    if permitted:
        return 0, 0
    if trans_a:
        depth = min(k, COLUMN_TILE_DEPTH_TN)
        rows = SMALL_MNK // (n * depth)
        return (m if rows >= m else rows // 8 * 8), depth
    depth = min(k, max(COLUMN_TILE_DEPTH_MIN, COLUMN_TILE_B_ELEMENTS // n))
    rows = SMALL_MNK // (n * depth)
    return (m if rows >= m else rows // 4 * 4), depth
