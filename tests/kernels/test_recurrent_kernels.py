"""numdiff.kernels.recurrent: the sequence kernels against NumPy loops in float32 and float64, and
their argument checks (shapes, dtypes, layout, overlapping output) before any compiled code runs."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.kernels import recurrent
from numdiff.kernels._row_products import add_products_nt
from tests.ops.cases_recurrent import gru_reference, lstm_reference, rnn_reference

L, N, H = 5, 3, 4


def _arrays(rng, dtype, *shapes):
    return [rng.standard_normal(shape).astype(dtype) for shape in shapes]


@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
def test_forward_kernels_match_numpy_loops(dtype, tol):
    rng = np.random.default_rng(0)
    p, h0, c0, w = _arrays(rng, dtype, (L, N, 4 * H), (N, H), (N, H), (4 * H, H))
    out = recurrent.lstm_sequence_forward(p, h0, c0, w, np.empty((L, N, 6 * H), dtype))
    np.testing.assert_allclose(out, lstm_reference(p, h0, c0, w), rtol=tol, atol=tol)
    p, w, b = _arrays(rng, dtype, (L, N, 3 * H), (3 * H, H), (3 * H,))
    out = recurrent.gru_sequence_forward(p, h0, w, b, np.empty((L, N, 5 * H), dtype))
    np.testing.assert_allclose(out, gru_reference(p, h0, w, b), rtol=tol, atol=tol)
    p, w = _arrays(rng, dtype, (L, N, H), (H, H))
    for relu in (False, True):
        out = recurrent.rnn_sequence_forward(p, h0, w, np.empty((L, N, H), dtype), relu)
        np.testing.assert_allclose(out, rnn_reference(p, h0, w, relu), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float64, 1e-13)])
@pytest.mark.parametrize("rows, cols, inner", [(1, 1, 1), (4, 3, 8), (5, 7, 13), (9, 4, 2), (16, 12, 33)])
def test_row_products_add_a_times_b_transposed_into_c(dtype, tol, rows, cols, inner):
    """Blocks of 4 rows x 3 columns, leftover rows and columns, row views of 3-D arrays (as the
    kernels pass them) and a C that already holds values, against NumPy."""
    rng = np.random.default_rng(rows * 100 + cols)
    a = rng.standard_normal((2, rows, inner + 3)).astype(dtype)[1, :, 1 : inner + 1]
    b = rng.standard_normal((cols, inner)).astype(dtype)
    c = rng.standard_normal((rows, cols)).astype(dtype)
    expected = c.astype(np.float64) + a.astype(np.float64) @ b.T.astype(np.float64)
    add_products_nt(a, b, c)
    np.testing.assert_allclose(c, expected, rtol=tol, atol=tol * inner)


def test_float32_backward_matches_float64():
    rng = np.random.default_rng(1)
    p, h0, c0, w = _arrays(rng, np.float64, (L, N, 4 * H), (N, H), (N, H), (4 * H, H))
    g = rng.standard_normal((L, N, 6 * H))
    results = []
    for dtype in (np.float64, np.float32):
        cast = [a.astype(dtype) for a in (p, h0, c0, w, g)]
        out = recurrent.lstm_sequence_forward(*cast[:4], np.empty((L, N, 6 * H), dtype))
        results.append(recurrent.lstm_sequence_backward(cast[4], out, cast[2], cast[3], np.empty((4 * L + 2) * N * H, dtype)))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-4, atol=1e-4)


def test_mismatched_shapes_name_the_kernel_and_the_shapes():
    p, h0, w = np.zeros((L, N, 4 * H)), np.zeros((N, H)), np.zeros((4 * H, H + 1))
    with pytest.raises(ValueError, match=r"lstm_sequence_forward: .*\(5, 3, 16\) and \(16, 5\)"):
        recurrent.lstm_sequence_forward(p, h0, h0, w, np.empty((L, N, 6 * H)))
    with pytest.raises(ValueError, match=r"gru_sequence_forward: h0 must have shape \(3, 4\), got \(2, 4\)"):
        recurrent.gru_sequence_forward(np.zeros((L, N, 3 * H)), np.zeros((2, H)), np.zeros((3 * H, H)), np.zeros(3 * H), np.empty((L, N, 5 * H)))
    with pytest.raises(ValueError, match=r"rnn_sequence_backward: res must have shape \(72\), got \(5, 3, 4\)"):
        recurrent.rnn_sequence_backward(np.zeros((L, N, H)), np.zeros((L, N, H)), np.zeros((H, H)), np.empty((L, N, H)), False)
    with pytest.raises(ValueError, match=r"lstm_sequence_backward: res must have shape \(264\), got \(5, 3, 24\)"):
        out = np.zeros((L, N, 6 * H))
        recurrent.lstm_sequence_backward(out, out.copy(), np.zeros((N, H)), np.zeros((4 * H, H)), np.empty_like(out))


def test_mixed_dtypes_non_contiguous_and_overlapping_outputs_are_refused():
    p, h0, w = np.zeros((L, N, H)), np.zeros((N, H)), np.zeros((H, H))
    with pytest.raises(TypeError, match="rnn_sequence_forward: all arrays must share one dtype"):
        recurrent.rnn_sequence_forward(p, h0.astype(np.float32), w, np.empty((L, N, H)), False)
    with pytest.raises(ValueError, match="rnn_sequence_forward: w_hh must be C-contiguous"):
        recurrent.rnn_sequence_forward(p, h0, np.zeros((H, 2 * H))[:, ::2], np.empty((L, N, H)), False)
    with pytest.raises(ValueError, match="rnn_sequence_forward: out .* overlaps projected"):
        recurrent.rnn_sequence_forward(p, h0, w, p, False)
