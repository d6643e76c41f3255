"""Float32 and float64 products with few rows or few columns cut into tiles for OpenBLAS's small-matrix kernels
(numdiff.kernels._gemm_tiles, built as numdiff.kernels._gemm_body.gemm_by_blas_in_tiles): every tile
within OpenBLAS's permit, the tiled product against NumPy float64 and against one BLAS call for every
transpose pair, alpha and beta, strided views and ragged last tiles; and the route's ``tiles`` flag."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from numdiff.kernels import _gemm_body
from numdiff.kernels._blas import prepare_blas
from numdiff.kernels._gemm_route import choose, gemm_route, openblas_small_kernels
from numdiff.kernels._gemm_tiles import (
    SMALL_MNK,
    SMALL_NT_MIN_DEPTH,
    SMALL_NT_OUTPUTS,
    TILE_COLUMNS_MAX,
    TILE_ROWS_MAX,
    TILE_ROWS_MAX_F64,
    TILE_ROWS_MAX_TN,
    TILE_ROWS_MIN,
    column_tile_shape,
    tile_shape,
)
from tests.kernels.test_gemm_loops import _expected, _operands  # the same operands and float64 reference

# Relative to the largest |alpha * op(a) @ op(b) + beta * c|: sums over K in another order.
TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12}
PAIRS = [(False, False), (False, True), (True, False), (True, True)]
# Copies of the two builds: the builds themselves compile only for the types their process's slots hold
# (numdiff.kernels._kernel_address.KernelSlot.fill), and this process's float32 slot holds one of them.
gemm_by_blas = njit(nogil=True)(_gemm_body.gemm_by_blas.py_func)
gemm_by_blas_in_tiles = njit(nogil=True)(_gemm_body.gemm_by_blas_in_tiles.py_func)


@pytest.mark.parametrize("itemsize", [4, 8])
@pytest.mark.parametrize("m", [1, 4, 7, 8, 16, 33, 48, 49, 64, 65, 128])
@pytest.mark.parametrize("k", [16, 31, 32, 64, 100, 784, 4096])
@pytest.mark.parametrize("n", [16, 130, 1000, 4096])
def test_every_tile_is_within_openblas_small_kernel_permit(m, k, n, itemsize):
    lanes = 64 // itemsize  # one AVX-512 register of float32 or float64
    for trans_a, trans_b in PAIRS:
        columns, depth = tile_shape(trans_a, trans_b, m, n, k, itemsize)
        most_rows = TILE_ROWS_MAX if itemsize == 4 else TILE_ROWS_MAX_F64
        if (trans_a, trans_b) == (True, False):
            most_rows = TILE_ROWS_MAX_TN
        tiled = TILE_ROWS_MIN <= m <= most_rows and m * n * k > SMALL_MNK and not (trans_a and trans_b)
        if trans_b and k < SMALL_NT_MIN_DEPTH:
            tiled = False
        assert (columns > 0) == tiled, (m, k, n, trans_a, trans_b)
        if not tiled:
            assert (columns, depth) == (0, 0)
            continue
        assert columns % lanes == 0 and columns > 0 and 1 <= depth <= k
        assert m * columns * depth <= SMALL_MNK
        if trans_b:
            assert m * columns <= SMALL_NT_OUTPUTS and depth >= SMALL_NT_MIN_DEPTH


@pytest.mark.parametrize("itemsize", [4, 8])
@pytest.mark.parametrize("m", [65, 100, 1024, 4096])
@pytest.mark.parametrize("k", [7, 31, 32, 64, 100, 1024, 3000])
@pytest.mark.parametrize("n", [2, 7, 32, 64, 65])
def test_every_column_tile_is_within_openblas_small_kernel_permit(m, k, n, itemsize):
    for trans_a, trans_b in PAIRS:
        rows, depth = column_tile_shape(trans_a, trans_b, m, n, k, itemsize)
        permitted = m * n * k <= SMALL_MNK
        if trans_b:  # OpenBLAS's own permit for a @ b.T, which the tiles replace by a @ (b.T copied)
            permitted = permitted and m * n <= SMALL_NT_OUTPUTS and k >= SMALL_NT_MIN_DEPTH
        tiled = n <= TILE_COLUMNS_MAX and m > n and not permitted and not (trans_a and trans_b)
        assert (rows > 0) == tiled, (m, k, n, trans_a, trans_b)
        if not tiled:
            assert (rows, depth) == (0, 0)
            continue
        assert 1 <= depth <= k and 1 <= rows <= m
        assert rows * n * depth <= SMALL_MNK  # each tile is an a @ b or a.T @ b the permit takes


@pytest.mark.parametrize("trans_a, trans_b", PAIRS)
@pytest.mark.parametrize(
    "m, k, n",
    [(8, 512, 512), (16, 128, 784), (33, 784, 130), (64, 100, 1000), (64, 4096, 48), (128, 16, 784), (100, 300, 500)]
    + [(1024, 1024, 7), (1000, 1030, 32), (4096, 512, 10), (300, 16, 7), (999, 700, 64)],  # few columns
)
@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiled_product_matches_numpy_and_one_blas_call(trans_a, trans_b, m, k, n, strided, dtype):
    prepare_blas(dtype)
    rng = np.random.default_rng(m * 7 + k + n)
    for alpha, beta in [(1.0, 0.0), (1.5, 1.0), (-0.5, 0.25)]:
        a, b, c = _operands(rng, dtype, m, k, n, trans_a, trans_b, strided)
        one_call = c.copy()
        expected = _expected(a, b, c, trans_a, trans_b, alpha, beta)
        gemm_by_blas_in_tiles(trans_a, trans_b, alpha, a, b, beta, c)
        gemm_by_blas(trans_a, trans_b, alpha, a, b, beta, one_call)
        scale = np.abs(expected).max()
        assert np.abs(c - expected).max() / scale < TOLERANCE[dtype]
        assert np.abs(c - one_call).max() / scale < TOLERANCE[dtype]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiles_with_beta_zero_do_not_read_c(dtype):
    prepare_blas(dtype)
    rng = np.random.default_rng(3)
    a, b, _ = _operands(rng, dtype, 16, 784, 512, False, False, False)
    c = np.full((16, 512), np.nan, dtype)
    gemm_by_blas_in_tiles(False, False, 1.0, a, b, 0.0, c)
    expected = a.astype(np.float64) @ b
    assert np.abs(c - expected).max() / np.abs(expected).max() < TOLERANCE[dtype]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_tiles_with_beta_zero_do_not_read_c(dtype):
    prepare_blas(dtype)
    rng = np.random.default_rng(4)
    for trans_a, trans_b in PAIRS[:3]:
        a, b, _ = _operands(rng, dtype, 1024, 1024, 7, trans_a, trans_b, False)
        c = np.full((1024, 7), np.nan, dtype)
        gemm_by_blas_in_tiles(trans_a, trans_b, 1.0, a, b, 0.0, c)
        expected = _expected(a, b, c, trans_a, trans_b, 1.0, 0.0)
        assert np.abs(c - expected).max() / np.abs(expected).max() < TOLERANCE[dtype]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiles_build_names_operands_that_do_not_match(dtype):
    prepare_blas(dtype)
    a = np.ones((16, 784), dtype)
    with pytest.raises(ValueError, match="gemm: operand shapes do not match the output"):
        gemm_by_blas_in_tiles(False, False, 1.0, a, np.ones((783, 512), dtype), 0.0, np.empty((16, 512), dtype))


def test_route_takes_tiles_only_on_blas_with_small_kernels():
    assert choose("blas", small_kernels=True).tiles is True
    assert choose("blas", small_kernels=False).tiles is False
    assert choose("loops", small_kernels=True).tiles is False
    route = gemm_route()
    assert route.tiles is (not route.loops and openblas_small_kernels())
