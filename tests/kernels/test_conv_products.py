"""The convolution cores' products (numdiff.kernels._conv_products.product) against NumPy.

The shapes cover every remainder of the 4-row x 4-step blocks, one-row and one-column products,
strided views of larger arrays as the cores pass them (a tile of an output plane), both
transpose flags, accumulation into c and overwriting it, and both float dtypes, on both routes
(``loops`` True: the Numba loops; False or None: numdiff.kernels._blas.gemm).
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit, typeof

from numdiff.kernels._blas import prepare_blas
from numdiff.kernels._conv_products import product
from numdiff.kernels._self_healing_cache import njit as cached_njit

prepare_blas()

SHAPES = [(1, 1, 1), (4, 4, 16), (5, 7, 3), (6, 9, 33), (64, 48, 20), (3, 130, 1), (1, 17, 40), (13, 1, 9)]


# numdiff's cached njit: a plain numba.njit(cache=True) caller loaded from the disk cache in a new
# process links to `product`'s slot before any call registers it, and crashed the second run.
@cached_njit(cache=True)
def _product_into_tile(loops, trans_a, trans_b, a, b, beta, plane, c0, c1):
    """The product written into columns c0:c1 of `plane`, the strided view a core passes."""
    product(loops, trans_a, trans_b, a, b, beta, plane[:, c0:c1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("beta", [0.0, 1.0])
@pytest.mark.parametrize("m, k, n", SHAPES)
@pytest.mark.parametrize("loops", [True, False, None])
def test_product_matches_numpy_for_every_flag_and_remainder(loops, m, k, n, beta, trans_b, trans_a, dtype):
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(dtype)
    plane = rng.standard_normal((m, n + 5)).astype(dtype)
    # NaN where beta == 0 must not be read.
    plane[:, 2 : 2 + n] = np.nan if beta == 0 else plane[:, 2 : 2 + n]
    before = plane.copy()
    _product_into_tile(loops, trans_a, trans_b, a, b, beta, plane, 2, 2 + n)
    expected = (a.T if trans_a else a).astype(np.float64) @ (b.T if trans_b else b).astype(np.float64)
    if beta == 1.0:
        expected += before[:, 2 : 2 + n]
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(plane[:, 2 : 2 + n], expected, rtol=tolerance, atol=tolerance * max(1, k))
    # The columns outside the tile are untouched.
    np.testing.assert_array_equal(plane[:, :2], before[:, :2])
    np.testing.assert_array_equal(plane[:, 2 + n :], before[:, 2 + n :])


@pytest.mark.parametrize("loops", [True, False])
def test_product_with_zero_depth_overwrites_with_zeros(loops):
    c = np.full((3, 4), np.nan)
    product(loops, False, False, np.empty((3, 0)), np.empty((0, 4)), 0.0, c)
    np.testing.assert_array_equal(c, np.zeros((3, 4)))


@pytest.mark.parametrize("loops", [True, False])
def test_product_rejects_mismatched_shapes(loops):
    with pytest.raises(ValueError, match="operand shapes"):
        product(loops, False, False, np.ones((3, 4)), np.ones((5, 2)), 0.0, np.empty((3, 2)))
    with pytest.raises(ValueError, match="operand shapes"):
        product(loops, False, True, np.ones((3, 4)), np.ones((2, 4)), 0.0, np.empty((3, 5)))


@pytest.mark.parametrize("loops", [True, False])
def test_product_rejects_an_output_without_unit_stride(loops):
    with pytest.raises(ValueError, match="unit stride"):
        product(loops, False, False, np.ones((3, 4)), np.ones((4, 4)), 0.0, np.empty((3, 8))[:, ::2])


def test_a_build_for_the_blas_route_leaves_the_loop_product_out():
    """None, the BLAS route's flag, is pruned while Numba compiles: the build calls gemm and holds
    no call of the loop nest (numdiff.kernels._gemm_loops.accumulate), which False's build keeps."""
    a, b, c = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32), np.empty((3, 5), np.float32)
    for loops in (None, False):
        product(loops, False, False, a, b, 0.0, c)
        np.testing.assert_array_equal(c, a @ b)
    uncached = njit(nogil=True)(product.dispatcher.py_func)  # built here, so its LLVM IR is at hand
    for loops in (None, False):
        uncached(loops, False, False, a, b, 0.0, c)
    operands = (typeof(a), typeof(b), typeof(0.0), typeof(c))
    code = {sig[0]: uncached.inspect_llvm(sig) for sig in uncached.signatures if sig[3:] == operands}
    assert "accumulate" in code[typeof(False)]
    assert "accumulate" not in code[typeof(None)]
