"""GEMM kernels against NumPy's float64 matmul, including the backward identities."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.kernels import matmul

SHAPES = [(1, 1, 1), (3, 5, 2), (17, 4, 33), (64, 48, 80), (200, 7, 150)]


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_gemm_variants_match_float64_reference(m, k, n, dtype, tol, rng):
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.sqrt(k)
    out = np.full((m, n), np.nan, dtype)
    np.testing.assert_allclose(matmul.gemm_nn(a, b, out), ref, rtol=tol["rtol"], atol=tol["atol"] * scale)
    out_nt = matmul.gemm_nt(a, np.ascontiguousarray(b.T), np.full((m, n), np.nan, dtype))
    np.testing.assert_allclose(out_nt, ref, rtol=tol["rtol"], atol=tol["atol"] * scale)
    out_tn = matmul.gemm_tn(np.ascontiguousarray(a.T), b, np.full((m, n), np.nan, dtype))
    np.testing.assert_allclose(out_tn, ref, rtol=tol["rtol"], atol=tol["atol"] * scale)


def test_gemm_with_empty_inner_dimension_writes_zeros(dtype):
    out = np.full((3, 4), 7.0, dtype)
    matmul.gemm_nn(np.zeros((3, 0), dtype), np.zeros((0, 4), dtype), out)
    assert np.all(out == 0)


@pytest.mark.parametrize("m,k,n", SHAPES[1:4])
def test_backward_products_match_analytic_gradients(m, k, n, dtype, tol, rng):
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    g = rng.standard_normal((m, n)).astype(dtype)
    ga = matmul.gemm_nt(g, b, np.empty_like(a))
    gb = matmul.gemm_tn(a, g, np.empty_like(b))
    g64, a64, b64 = (t.astype(np.float64) for t in (g, a, b))
    np.testing.assert_allclose(ga, g64 @ b64.T, rtol=tol["rtol"], atol=tol["atol"] * np.sqrt(n))
    np.testing.assert_allclose(gb, a64.T @ g64, rtol=tol["rtol"], atol=tol["atol"] * np.sqrt(m))


@pytest.mark.parametrize("batch", [1, 2, 5])
def test_batched_gemm_matches_per_slice_products(batch, dtype, tol, rng):
    a = rng.standard_normal((batch, 6, 9)).astype(dtype)
    b = rng.standard_normal((batch, 9, 4)).astype(dtype)
    g = rng.standard_normal((batch, 6, 4)).astype(dtype)
    out = matmul.bgemm_nn(a, b, np.empty((batch, 6, 4), dtype))
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=tol["rtol"], atol=tol["atol"] * 3)
    ga = matmul.bgemm_nt(g, b, np.empty_like(a))
    gb = matmul.bgemm_tn(a, g, np.empty_like(b))
    g64 = g.astype(np.float64)
    np.testing.assert_allclose(ga, g64 @ b.transpose(0, 2, 1), rtol=tol["rtol"], atol=tol["atol"] * 3)
    np.testing.assert_allclose(
        gb, a.transpose(0, 2, 1).astype(np.float64) @ g64, rtol=tol["rtol"], atol=tol["atol"] * 3
    )


def test_large_gemm_split_across_threads_matches_reference(rng):
    a, b = rng.standard_normal((300, 200)), rng.standard_normal((200, 260))
    np.testing.assert_allclose(matmul.gemm_nn(a, b, np.empty((300, 260))), a @ b, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(matmul.gemm_tn(a, a, np.empty((200, 200))), a.T @ a, rtol=1e-11, atol=1e-10)


def test_gemm_rejects_mismatched_inner_dimension():
    with pytest.raises(ValueError, match=r"gemm_nn: b must have shape \(3, \*\), got \(4, 2\)"):
        matmul.gemm_nn(np.ones((2, 3)), np.ones((4, 2)), np.empty((2, 2)))


def test_gemm_rejects_wrong_output_shape():
    with pytest.raises(ValueError, match=r"gemm_nt: out must have shape \(2, 5\)"):
        matmul.gemm_nt(np.ones((2, 3)), np.ones((5, 3)), np.empty((2, 4)))


def test_gemm_rejects_mixed_dtypes():
    with pytest.raises(TypeError, match="gemm_nn: all arrays must share one dtype"):
        matmul.gemm_nn(np.ones((2, 2), np.float32), np.ones((2, 2)), np.empty((2, 2)))


def test_gemm_rejects_integer_arrays():
    with pytest.raises(TypeError, match="gemm_nn: a must be float32 or float64, got int64"):
        matmul.gemm_nn(np.ones((2, 2), np.int64), np.ones((2, 2)), np.empty((2, 2)))


def test_gemm_rejects_non_contiguous_input():
    a = np.ones((4, 4))[:, ::2]
    with pytest.raises(ValueError, match="gemm_nn: a must be C-contiguous"):
        matmul.gemm_nn(a, np.ones((2, 2)), np.empty((4, 2)))


def test_batched_gemm_rejects_batch_mismatch():
    with pytest.raises(ValueError, match="bgemm_nn: batch sizes differ"):
        matmul.bgemm_nn(np.ones((2, 3, 4)), np.ones((3, 4, 5)), np.empty((2, 3, 5)))


def test_gemm_matches_torch_when_available(rng):
    torch = pytest.importorskip("torch")
    a, b = rng.standard_normal((31, 17)), rng.standard_normal((17, 23))
    ref = (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()
    np.testing.assert_allclose(matmul.gemm_nn(a, b, np.empty((31, 23))), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kernel", ["gemm_nn", "gemm_nt", "gemm_tn"])
def test_gemm_refuses_an_output_overlapping_an_operand(kernel):
    a = np.ones((3, 3))
    with pytest.raises(ValueError, match=f"{kernel}: out \\(3, 3\\) overlaps a \\(3, 3\\) in memory"):
        getattr(matmul, kernel)(a, np.ones((3, 3)), a)
    buffer = np.ones((2, 3, 3))
    with pytest.raises(ValueError, match="out .* overlaps b"):
        getattr(matmul, kernel)(np.ones((3, 3)), buffer[0], buffer[0][:, :])
    np.testing.assert_array_equal(a, 1.0)  # refused before anything was written


def test_batched_gemm_refuses_an_output_overlapping_an_operand():
    a = np.ones((2, 3, 3))
    with pytest.raises(ValueError, match="bgemm_nn: out .* overlaps a"):
        matmul.bgemm_nn(a, np.ones((2, 3, 3)), a)


@pytest.mark.parametrize("m,k,n,by_rows", [(256, 10, 512, True), (128, 256, 512, True), (32, 256, 512, False),
                                           (256, 512, 520, False), (300, 200, 260, True)])
def test_products_split_by_rows_or_columns_match_the_reference(m, k, n, by_rows, rng):
    # Every split a product can take across two threads (numdiff.kernels._blas.split_by_rows: a
    # short product with enough rows goes by rows even when its output is wider than tall), for
    # each operand layout, against float64 NumPy.
    import numba

    import numdiff
    from numdiff.kernels._blas import split_by_rows

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs a Numba pool of at least two threads")
    assert split_by_rows(m, n, k, 2) is by_rows
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    previous = numdiff.get_num_threads()
    numdiff.set_num_threads(2)
    try:
        got = [matmul.gemm_nn(a, b, np.empty((m, n), np.float32)),
               matmul.gemm_nt(a, np.ascontiguousarray(b.T), np.empty((m, n), np.float32)),
               matmul.gemm_tn(np.ascontiguousarray(a.T), b, np.empty((m, n), np.float32))]
    finally:
        numdiff.set_num_threads(previous)
    for out in got:
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4 * np.sqrt(k))
