"""The general product in Numba loops (numdiff.kernels._gemm_loops) and its route (numdiff.kernels._gemm_route):
loop_gemm against NumPy float64 products for every transpose pair, both dtypes, alpha and beta, strided
views and the blocked sizes; the route's choice and its bad value; gemm, gemm_parallel, matmul, bmm
and Linear forced each way (``NUMDIFF_GEMM``) in subprocesses, since the route is chosen once a process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from numdiff.kernels._blas import prepare_blas
from numdiff.kernels._conv_route import platform_route
from numdiff.kernels._gemm_loops import (
    DOT_BLOCK_BYTES,
    DOT_MIN_DEPTH,
    DOT_MIN_DEPTH_FEW_ROWS,
    DOT_MIN_ROWS,
    KC,
    PACK_MIN_ROWS,
    SHORT_K_PACKED_MIN_ROWS,
    TRANSPOSED_B_MIN_ROWS,
    UNTRANSPOSED_MAX_ROWS,
    dot_rows,
    loop_gemm,
    loops_suit,
    panel_columns,
)
from numdiff.kernels._gemm_route import CHOICES, GemmRouteError, choose, gemm_route

ROOT = Path(__file__).resolve().parents[2]
# Relative to the largest |alpha * op(a) @ op(b) + beta * c|: float32 summation over K terms in another order.
TOLERANCE = {np.float32: 2e-5, np.float64: 1e-13}


def _operands(rng, dtype, m, k, n, trans_a, trans_b, strided):
    """op(a) (m, k), op(b) (k, n), c (m, n); with `strided`, each a view into a larger array with a
    row stride beyond its width (c's rows stay unit stride, as gemm requires)."""
    def make(rows, cols):
        if not strided:
            return rng.standard_normal((rows, cols)).astype(dtype)
        return rng.standard_normal((rows + 3, cols + 5)).astype(dtype)[1 : rows + 1, 2 : cols + 2]

    a = make(k, m) if trans_a else make(m, k)
    b = make(n, k) if trans_b else make(k, n)
    return a, b, make(m, n)


def _expected(a, b, c, trans_a, trans_b, alpha, beta):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    product = (a64.T if trans_a else a64) @ (b64.T if trans_b else b64)
    return alpha * product + (beta * c.astype(np.float64) if beta != 0 else 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize(
    "m, k, n, strided",
    [
        (5, 7, 9, False),  # no full 4x4 block of rows and steps in one direction
        (13, 30, 70, True),  # leftover rows and steps, strided views
        (70, 300, 40, False),  # packed (>= 64 rows), K split into blocks of KC
        (64, 2 * KC + 3, 600, True),  # K blocks with a leftover, packed from strided views
        (3, 40, 20_000, False),  # N split into panels (float32: 8192 columns a panel)
        (21, 2000, 150, True),  # a @ b.T as dot products: b's rows in blocks (float32: 32 rows), leftovers
        (255, 97, 66, False),  # a @ b.T dot products, the most rows before packing
        (130, 40, 50, True),  # a @ b.T with a short K and enough rows: packed
    ],
)
def test_loop_gemm_matches_numpy_for_every_transpose_pair(dtype, trans_a, trans_b, m, k, n, strided):
    rng = np.random.default_rng(m * n + k)
    for alpha, beta in ((1.0, 0.0), (0.7, 1.0), (-1.3, 0.4)):
        a, b, c = _operands(rng, dtype, m, k, n, trans_a, trans_b, strided)
        expected = _expected(a, b, c, trans_a, trans_b, alpha, beta)
        if beta == 0:
            c[...] = np.nan  # beta = 0 must overwrite c, not scale it
        loop_gemm(trans_a, trans_b, alpha, a, b, beta, c)
        error = np.abs(c - expected).max() / max(1.0, np.abs(expected).max())
        assert error < TOLERANCE[dtype], (alpha, beta, error)


def test_loop_gemm_with_alpha_zero_only_scales_c():
    rng = np.random.default_rng(1)
    a, b, c = _operands(rng, np.float32, 9, 6, 11, False, False, False)
    a[0, 0] = np.nan  # never read when alpha is 0
    expected = 0.5 * c
    loop_gemm(False, False, 0.0, a, b, 0.5, c)
    np.testing.assert_array_equal(c, expected)


def test_panel_columns_keep_a_block_within_its_bytes():
    assert panel_columns(100, 300, 4) == 300  # fits whole
    columns = panel_columns(4 * KC, 100_000, 8)
    assert columns % 16 == 0 and KC * columns * 8 <= 1 << 19
    assert panel_columns(KC, 17, 4) == 17


def test_loops_suit_leaves_short_transposed_b_products_to_blas_unless_k_repays_dot_products():
    assert loops_suit(False, False, 2, 8)
    assert loops_suit(True, False, 2, 8)
    assert not loops_suit(False, True, SHORT_K_PACKED_MIN_ROWS - 1, DOT_MIN_DEPTH - 1)
    assert loops_suit(False, True, SHORT_K_PACKED_MIN_ROWS - 1, DOT_MIN_DEPTH)
    assert not loops_suit(False, True, SHORT_K_PACKED_MIN_ROWS, 8)  # the packed nest loses to BLAS
    assert loops_suit(False, True, TRANSPOSED_B_MIN_ROWS - 1, DOT_MIN_DEPTH)
    assert loops_suit(False, True, PACK_MIN_ROWS - 1, DOT_MIN_DEPTH_FEW_ROWS)
    assert not loops_suit(False, True, PACK_MIN_ROWS, DOT_MIN_DEPTH_FEW_ROWS)
    assert loops_suit(False, True, DOT_MIN_ROWS, DOT_MIN_DEPTH)
    assert not loops_suit(False, True, DOT_MIN_ROWS - 1, 4 * DOT_MIN_DEPTH)  # one gemv a row
    assert not loops_suit(True, True, TRANSPOSED_B_MIN_ROWS - 1, 4 * DOT_MIN_DEPTH)
    assert not loops_suit(True, True, TRANSPOSED_B_MIN_ROWS, 8)
    assert not loops_suit(False, True, TRANSPOSED_B_MIN_ROWS, 4 * DOT_MIN_DEPTH)
    assert loops_suit(False, False, UNTRANSPOSED_MAX_ROWS, 8) and loops_suit(True, False, UNTRANSPOSED_MAX_ROWS, 8)
    assert not loops_suit(False, False, UNTRANSPOSED_MAX_ROWS + 1, 512)
    assert not loops_suit(True, False, UNTRANSPOSED_MAX_ROWS + 1, 512)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_rows_matches_numpy_across_row_blocks_and_leftovers(dtype):
    rng = np.random.default_rng(7)
    depth = 301
    block = DOT_BLOCK_BYTES // (depth * np.dtype(dtype).itemsize)
    for m, n in ((1, 1), (6, 3), (17, 2 * block + 7)):
        a = rng.standard_normal((m, depth)).astype(dtype)
        b = rng.standard_normal((n, depth)).astype(dtype)
        for alpha, beta in ((1.0, 0.0), (-0.5, 2.0)):
            c = rng.standard_normal((m, n)).astype(dtype)
            expected = _expected(a, b, c, False, True, alpha, beta)
            if beta == 0:
                c[...] = np.nan
            dot_rows(alpha, a, b, beta, c)
            error = np.abs(c - expected).max() / max(1.0, np.abs(expected).max())
            assert error < TOLERANCE[dtype], (m, n, alpha, beta, error)


def test_loop_gemm_takes_a_transposed_b_with_non_unit_k_stride_through_the_packed_nest():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((9, 2 * 130)).astype(np.float32)[:, ::2]
    b = rng.standard_normal((11, 2 * 130)).astype(np.float32)[:, ::2]
    c = np.full((9, 11), np.nan, np.float32)
    loop_gemm(False, True, 1.0, a, b, 0.0, c)
    expected = _expected(a, b, c, False, True, 1.0, 0.0)
    assert np.abs(c - expected).max() / np.abs(expected).max() < TOLERANCE[np.float32]


def test_gemm_through_the_route_matches_numpy_in_both_dtypes():
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        prepare_blas(dtype)
        from numdiff.kernels._blas import gemm

        for trans_a, trans_b, m, k in ((False, False, 33, 50), (True, False, 40, 50),
                                       (False, True, TRANSPOSED_B_MIN_ROWS + 1, 50), (False, True, 20, 200),
                                       (False, True, DOT_MIN_ROWS, 200), (False, True, 3, 200),
                                       (False, True, SHORT_K_PACKED_MIN_ROWS, 40)):
            a, b, c = _operands(rng, dtype, m, k, 24, trans_a, trans_b, True)
            expected = _expected(a, b, c, trans_a, trans_b, 1.5, 1.0)
            gemm(trans_a, trans_b, 1.5, a, b, 1.0, c)
            assert np.abs(c - expected).max() / np.abs(expected).max() < TOLERANCE[dtype]


def test_choose_forces_either_route_and_auto_follows_the_platform_rule():
    assert choose("loops").loops is True
    assert choose("blas").loops is False
    assert choose("auto").loops is platform_route().loops
    assert gemm_route().reason
    assert CHOICES == ("auto", "blas", "loops")


def test_choose_names_the_variable_and_the_choices_for_a_bad_request():
    with pytest.raises(GemmRouteError, match=r"NUMDIFF_GEMM='fast' is not one of auto, blas, loops"):
        choose("fast")


def _python(program: str, route: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMDIFF_GEMM=route, NUMBA_NUM_THREADS="2", PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-c", program, *args], cwd=ROOT, env=env, timeout=600, capture_output=True, text=True
    )


def test_a_bad_environment_value_fails_the_first_product_with_a_clear_error():
    done = _python("import numdiff\nnumdiff.ones(3, 4) @ numdiff.ones(4, 5)\n", "fast")
    assert done.returncode != 0
    assert "GemmRouteError" in done.stderr
    assert "NUMDIFF_GEMM='fast' is not one of auto, blas, loops" in done.stderr


_PROGRAM = r"""
import sys

import numpy as np
import torch

import numdiff
from numdiff.kernels._blas import gemm_parallel, prepare_blas
from numdiff.kernels._gemm_route import gemm_route

assert gemm_route().loops is (sys.argv[1] == "loops"), gemm_route()
rng = np.random.default_rng(0)
for dtype, tolerance in ((np.float32, 2e-5), (np.float64, 1e-12)):
    prepare_blas(dtype)
    for trans_a, trans_b, m, k, n in ((False, False, 300, 70, 90), (True, False, 90, 300, 70),
                                      (False, True, 300, 64, 200), (False, True, 40, 130, 90),
                                      (True, True, 17, 33, 400)):
        a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(dtype)
        b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(dtype)
        c = rng.standard_normal((m, n)).astype(dtype)
        expected = 0.5 * ((a.T if trans_a else a).astype(float) @ (b.T if trans_b else b).astype(float)) + 2 * c
        gemm_parallel(trans_a, trans_b, 0.5, a, b, 2.0, c, 2)
        assert np.abs(c - expected).max() / np.abs(expected).max() < tolerance, (dtype, trans_a, trans_b)
    x = rng.standard_normal((6, 40, 30)).astype(dtype)
    w = rng.standard_normal((6, 30, 100)).astype(dtype)  # Linear below: 240x100 @ (300x100).T, dot products
    weight = rng.standard_normal((300, 100)).astype(dtype)
    bias = rng.standard_normal(300).astype(dtype)
    v = rng.standard_normal((300, 25)).astype(dtype)
    arrays = (x, w, weight, bias, v)
    tt = [torch.tensor(t, requires_grad=True) for t in arrays]
    nt = [numdiff.tensor(t, requires_grad=True) for t in arrays]
    theirs = torch.nn.functional.linear(torch.bmm(tt[0], tt[1]), tt[2], tt[3]).reshape(-1, 300) @ tt[4]
    mine = numdiff.nn.functional.linear(numdiff.bmm(nt[0], nt[1]), nt[2], nt[3]).reshape(-1, 300) @ nt[4]
    g = rng.standard_normal(tuple(theirs.shape)).astype(dtype)
    theirs.backward(torch.tensor(g))
    mine.backward(numdiff.tensor(g))
    pairs = [("out", mine, theirs)] + [(f"grad {i}", nt[i].grad, tt[i].grad) for i in range(5)]
    for name, got, want in pairs:
        want = want.detach().numpy()
        scale = max(1.0, float(np.abs(want).max()))
        assert np.abs(got.detach().numpy() - want).max() / scale < tolerance * 10, (name, dtype)
print("checked")
"""


@pytest.mark.parametrize("route", ["loops", "blas"])
def test_products_match_numpy_and_torch_with_the_route_forced(route):
    done = _python(_PROGRAM, route, route)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "checked" in done.stdout
