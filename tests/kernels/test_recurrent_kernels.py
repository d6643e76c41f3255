"""numdiff.kernels.recurrent: the sequence kernels against NumPy loops in float32 and float64, and
their argument checks (shapes, dtypes, layout, overlapping output) before any compiled code runs."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from numdiff.kernels import recurrent
from numdiff.kernels._blas import prepare_blas
from numdiff.kernels._row_products import (
    add_products_nt,
    add_step_product,
    forward_reads_transposed,
)
from tests.ops.cases_recurrent import (
    gru_record_reference,
    lstm_record_reference,
    lstm_reference,
    rnn_reference,
)

L, N, H = 5, 3, 4


def _arrays(rng, dtype, *shapes):
    return [rng.standard_normal(shape).astype(dtype) for shape in shapes]


def _lstm_forward(p, h0, c0, w):
    """lstm_sequence_forward into fresh arrays: (record (L, N, 5H), hs (L + 1, N, H))."""
    steps, batch, hidden = p.shape[0], p.shape[1], w.shape[1]
    record = np.empty((steps, batch, 5 * hidden), p.dtype)
    hs = recurrent.lstm_sequence_forward(p, h0, c0, w, record, np.empty((steps + 1, batch, hidden), p.dtype))
    return record, hs


def _assert_lstm_forward(p, h0, c0, w, tol):
    record, hs = _lstm_forward(p, h0, c0, w)
    np.testing.assert_allclose(record, lstm_record_reference(p, h0, c0, w), rtol=tol, atol=tol)
    np.testing.assert_allclose(hs, lstm_reference(p, h0, c0, w), rtol=tol, atol=tol)
    return record


@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
def test_forward_kernels_match_numpy_loops(dtype, tol):
    rng = np.random.default_rng(0)
    p, h0, c0, w = _arrays(rng, dtype, (L, N, 4 * H), (N, H), (N, H), (4 * H, H))
    _assert_lstm_forward(p, h0, c0, w, tol)
    p, w, b = _arrays(rng, dtype, (L, N, 3 * H), (3 * H, H), (3 * H,))
    out = recurrent.gru_sequence_forward(p, h0, w, b, np.empty((L, N, 5 * H), dtype))
    np.testing.assert_allclose(out, gru_record_reference(p, h0, w, b), rtol=tol, atol=tol)
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


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float64, 1e-13)])
@pytest.mark.parametrize("rows, cols, inner", [(1, 1, 1), (4, 12, 8), (7, 13, 5), (9, 16, 33)])
def test_step_product_from_rows_of_the_transposed_weight_matches_numpy(dtype, tol, rows, cols, inner):
    """add_step_product as gemm on W^T (leftover rows and inner steps included) and, given
    a transpose of no rows, as add_products_nt; row views of a 3-D array as a, C holding values."""
    prepare_blas(dtype)  # the transposed route is a gemm call
    rng = np.random.default_rng(rows * 10 + cols)
    a = rng.standard_normal((2, rows, inner + 3)).astype(dtype)[1, :, 1 : inner + 1]
    w = rng.standard_normal((cols, inner)).astype(dtype)
    c = rng.standard_normal((rows, cols)).astype(dtype)
    expected = c.astype(np.float64) + a.astype(np.float64) @ w.T.astype(np.float64)
    for w_t in (np.ascontiguousarray(w.T), np.empty((0, cols), dtype)):
        out = c.copy()
        add_step_product(a, w, w_t, out)
        np.testing.assert_allclose(out, expected, rtol=tol, atol=tol * inner)


def test_forward_reads_the_transposed_weight_only_for_short_hidden_sizes_and_long_sequences():
    assert forward_reads_transposed(64 * 16, np.zeros((512, 128), np.float32))
    assert not forward_reads_transposed(1 * 16, np.zeros((512, 128), np.float32))  # one step: the copy does not pay
    assert not forward_reads_transposed(64 * 16, np.zeros((2048, 512), np.float32))  # H > 256
    assert not forward_reads_transposed(64 * 16, np.zeros((800, 200), np.float64))  # W_hh over 768 KiB
    assert not forward_reads_transposed(64 * 16, np.zeros((1024, 256), np.float32))
    assert forward_reads_transposed(64 * 16, np.zeros((800, 200), np.float32))


@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
def test_forward_kernels_on_the_transposed_weight_route_match_numpy_loops(dtype, tol):
    """37 steps x batch 7 (259 rows, so the forwards read W_hh^T; 7 = one 4-row block and 3
    leftover rows) and H = 5 (a leftover inner step)."""
    steps, batch, hidden = 37, 7, 5
    rng = np.random.default_rng(2)
    p, h0, c0, w = _arrays(rng, dtype, (steps, batch, 4 * hidden), (batch, hidden), (batch, hidden), (4 * hidden, hidden))
    w *= 0.5
    assert forward_reads_transposed(steps * batch, w)
    _assert_lstm_forward(p, h0, c0, w, tol)
    p, w, b = _arrays(rng, dtype, (steps, batch, 3 * hidden), (3 * hidden, hidden), (3 * hidden,))
    out = recurrent.gru_sequence_forward(p, h0, w, b, np.empty((steps, batch, 5 * hidden), dtype))
    np.testing.assert_allclose(out, gru_record_reference(p, h0, w, b), rtol=tol, atol=tol)
    p, w = _arrays(rng, dtype, (steps, batch, hidden), (hidden, hidden))
    w *= 0.3
    for relu in (False, True):
        out = recurrent.rnn_sequence_forward(p, h0, w, np.empty((steps, batch, hidden), dtype), relu)
        np.testing.assert_allclose(out, rnn_reference(p, h0, w, relu), rtol=tol, atol=tol)


@pytest.mark.parametrize("batch", [1, 5, 8])
def test_one_step_backward_reads_w_hh_as_it_lies_and_matches_the_first_step_of_two(batch):
    """A one-step backward (a cell's step) gives the gradients that the first step of a two-step
    backward gives, seeded with step 1's d h_1 and d c_1: every family, float64."""
    rng = np.random.default_rng(batch)
    hidden = 6
    p, h0, c0, w, g = _arrays(rng, np.float64, (2, batch, 4 * hidden), (batch, hidden), (batch, hidden), (4 * hidden, hidden), (3, batch, hidden))
    g[1] = 0.0  # no gradient on h_2, so d c_2 = g[2] alone
    out, _ = _lstm_forward(p, h0, c0, w)
    two = recurrent.lstm_sequence_backward(g, out, c0, w, np.empty((4 * 2 + 2) * batch * hidden))
    # What reaches step 0 in the two-step run: d h_1 = g[0] + d gates_1 @ W_hh, d c_1 = d c_2 * f_2
    size = batch * 4 * hidden
    d_gates_1 = two[size : 2 * size].reshape(batch, 4 * hidden)
    one_grad = np.stack([g[0] + d_gates_1 @ w, g[2] * out[1, :, 2 * hidden : 3 * hidden]])  # d c_2 * f_2
    one = recurrent.lstm_sequence_backward(one_grad, out[:1].copy(), c0, w, np.empty((4 + 2) * batch * hidden))
    np.testing.assert_allclose(one[:size], two[:size], rtol=1e-12, atol=1e-12)  # d gates of step 0
    np.testing.assert_allclose(one[size:], two[2 * size :], rtol=1e-12, atol=1e-12)  # d h_0, d c_0
    for op, gates, extra in (("rnn", 1, ()), ("gru", 3, ((3 * hidden,),))):
        p, w, *bias = _arrays(rng, np.float64, (1, batch, gates * hidden), (gates * hidden, hidden), *extra)
        g1 = rng.standard_normal((1, batch, hidden))
        if op == "rnn":
            out = recurrent.rnn_sequence_forward(p, h0, w, np.empty((1, batch, hidden)), False)
            got = recurrent.rnn_sequence_backward(g1, out, w, np.empty(2 * batch * hidden), False)
            d_pre, d_h0 = got[: batch * hidden].reshape(batch, hidden), got[batch * hidden :].reshape(batch, hidden)
            np.testing.assert_allclose(d_h0, d_pre @ w, rtol=1e-12, atol=1e-12)
        else:
            out = recurrent.gru_sequence_forward(p, h0, w, bias[0], np.empty((1, batch, 5 * hidden)))
            got = recurrent.gru_sequence_backward(g1, out, h0, w, np.empty(7 * batch * hidden))
            d_hidden = got[3 * batch * hidden : 6 * batch * hidden].reshape(batch, 3 * hidden)
            z = out[0, :, 2 * hidden : 3 * hidden]
            np.testing.assert_allclose(got[6 * batch * hidden :].reshape(batch, hidden), g1[0] * z + d_hidden @ w, rtol=1e-12, atol=1e-12)


def test_float32_backward_matches_float64():
    rng = np.random.default_rng(1)
    p, h0, c0, w = _arrays(rng, np.float64, (L, N, 4 * H), (N, H), (N, H), (4 * H, H))
    g = rng.standard_normal((L + 1, N, H))  # d h_1 .. d h_L, d c_L
    results = []
    for dtype in (np.float64, np.float32):
        cast = [a.astype(dtype) for a in (p, h0, c0, w, g)]
        out, _ = _lstm_forward(*cast[:4])
        results.append(recurrent.lstm_sequence_backward(cast[4], out, cast[2], cast[3], np.empty((4 * L + 2) * N * H, dtype)))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-4, atol=1e-4)


def test_mismatched_shapes_name_the_kernel_and_the_shapes():
    p, h0, w = np.zeros((L, N, 4 * H)), np.zeros((N, H)), np.zeros((4 * H, H + 1))
    with pytest.raises(ValueError, match=r"lstm_sequence_forward: .*\(5, 3, 16\) and \(16, 5\)"):
        recurrent.lstm_sequence_forward(p, h0, h0, w, np.empty((L, N, 5 * H)), np.empty((L + 1, N, H)))
    with pytest.raises(ValueError, match=r"lstm_sequence_forward: hs must have shape \(6, 3, 4\), got \(5, 3, 4\)"):
        recurrent.lstm_sequence_forward(p, h0, h0, np.zeros((4 * H, H)), np.empty((L, N, 5 * H)), np.empty((L, N, H)))
    with pytest.raises(ValueError, match=r"lstm_sequence_forward: record must have shape \(5, 3, 20\), got \(5, 3, 24\)"):
        recurrent.lstm_sequence_forward(p, h0, h0, np.zeros((4 * H, H)), np.empty((L, N, 6 * H)), np.empty((L + 1, N, H)))
    with pytest.raises(ValueError, match=r"gru_sequence_forward: h0 must have shape \(3, 4\), got \(2, 4\)"):
        recurrent.gru_sequence_forward(np.zeros((L, N, 3 * H)), np.zeros((2, H)), np.zeros((3 * H, H)), np.zeros(3 * H), np.empty((L, N, 5 * H)))
    with pytest.raises(ValueError, match=r"rnn_sequence_backward: res must have shape \(72\), got \(5, 3, 4\)"):
        recurrent.rnn_sequence_backward(np.zeros((L, N, H)), np.zeros((L, N, H)), np.zeros((H, H)), np.empty((L, N, H)), False)
    with pytest.raises(ValueError, match=r"lstm_sequence_backward: res must have shape \(264\), got \(5, 3, 20\)"):
        out = np.zeros((L, N, 5 * H))
        recurrent.lstm_sequence_backward(np.zeros((L + 1, N, H)), out, np.zeros((N, H)), np.zeros((4 * H, H)), np.empty_like(out))
    with pytest.raises(ValueError, match=r"lstm_sequence_backward: grad must have shape \(6, 3, 4\), got \(5, 3, 20\)"):
        out = np.zeros((L, N, 5 * H))
        recurrent.lstm_sequence_backward(out.copy(), out, np.zeros((N, H)), np.zeros((4 * H, H)), np.empty((4 * L + 2) * N * H))


def test_mixed_dtypes_non_contiguous_and_overlapping_outputs_are_refused():
    p, h0, w = np.zeros((L, N, H)), np.zeros((N, H)), np.zeros((H, H))
    with pytest.raises(TypeError, match="rnn_sequence_forward: all arrays must share one dtype"):
        recurrent.rnn_sequence_forward(p, h0.astype(np.float32), w, np.empty((L, N, H)), False)
    with pytest.raises(ValueError, match="rnn_sequence_forward: w_hh must be C-contiguous"):
        recurrent.rnn_sequence_forward(p, h0, np.zeros((H, 2 * H))[:, ::2], np.empty((L, N, H)), False)
    with pytest.raises(ValueError, match="rnn_sequence_forward: out .* overlaps projected"):
        recurrent.rnn_sequence_forward(p, h0, w, p, False)


@pytest.mark.parametrize("batch, parts", [(1, 2), (6, 2), (8, 2), (11, 3), (16, 2), (20, 2), (100, 16), (64, 4)])
def test_batch_bounds_cover_every_row_once_in_runs_of_at_least_four(batch, parts):
    bounds = recurrent.batch_bounds(batch, parts)
    sizes = np.diff(bounds)
    assert bounds[0] == 0 and bounds[-1] == batch and len(sizes) <= parts
    assert (sizes > 0).all() and (len(sizes) == 1 or (sizes >= 4).all())
    assert (sizes[:-1] % 4 == 0).all()  # the product's 4-row blocks stay whole


def _run_all(rng_seed, dtype, batch, hidden, steps):
    """Every kernel's forward and backward result for one draw of inputs."""
    rng = np.random.default_rng(rng_seed)
    results = []
    p, h0, c0, w = _arrays(rng, dtype, (steps, batch, 4 * hidden), (batch, hidden), (batch, hidden), (4 * hidden, hidden))
    out, hs = _lstm_forward(p, h0, c0, w)
    (g,) = _arrays(rng, dtype, (steps + 1, batch, hidden))
    size = (4 * steps + 2) * batch * hidden
    results += [out, hs, recurrent.lstm_sequence_backward(g, out, c0, w, np.empty(size, dtype))]
    p, w, b = _arrays(rng, dtype, (steps, batch, 3 * hidden), (3 * hidden, hidden), (3 * hidden,))
    out = recurrent.gru_sequence_forward(p, h0, w, b, np.empty((steps, batch, 5 * hidden), dtype))
    (g,) = _arrays(rng, dtype, (steps, batch, hidden))
    size = (6 * steps + 1) * batch * hidden
    results += [out, recurrent.gru_sequence_backward(g, out, h0, w, np.empty(size, dtype))]
    p, w = _arrays(rng, dtype, (steps, batch, hidden), (hidden, hidden))
    for relu in (False, True):
        out = recurrent.rnn_sequence_forward(p, h0, w, np.empty((steps, batch, hidden), dtype), relu)
        (g,) = _arrays(rng, dtype, out.shape)
        size = (steps + 1) * batch * hidden
        results += [out, recurrent.rnn_sequence_backward(g, out, w, np.empty(size, dtype), relu)]
    return results


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("batch", [8, 13, 21])
def test_batch_split_between_threads_gives_the_one_thread_results(dtype, tol, batch):
    """The parallel builds run the batch in parts (each part every step of its rows); forced on
    at two threads they give the serial build's numbers, forward and backward, for batches that
    split evenly and not (a part's leftover rows take the product's one-row path)."""
    import numdiff
    from numdiff.kernels._parallel import always_parallel, always_serial

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs a Numba pool of two threads")
    previous = numdiff.get_num_threads()
    try:
        numdiff.set_num_threads(2)
        with always_serial():
            serial = _run_all(batch, dtype, batch, 5, 4)
        with always_parallel():
            parallel = _run_all(batch, dtype, batch, 5, 4)
    finally:
        numdiff.set_num_threads(previous)
    for one, split in zip(serial, parallel):
        np.testing.assert_allclose(split, one, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_split_batch_layers_pass_gradcheck_bidirectional_batch_first(mode):
    """Through nn layers (two layers, bidirectional, batch_first, batch 9: parts of 4 and 5 rows) the
    parallel builds' forward and backward pass a float64 gradient check."""
    import numdiff
    from numdiff.autograd import gradcheck
    from numdiff.kernels._parallel import always_parallel

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs a Numba pool of two threads")
    numdiff.manual_seed(0)
    layer = getattr(numdiff.nn, mode)(3, 4, num_layers=2, bidirectional=True, batch_first=True).double()
    x = numdiff.randn(9, 3, 3, dtype=numdiff.float64, requires_grad=True)
    previous = numdiff.get_num_threads()
    try:
        numdiff.set_num_threads(2)
        with always_parallel():
            assert gradcheck(lambda x: layer(x)[0], (x,))
    finally:
        numdiff.set_num_threads(previous)


@pytest.mark.parametrize("batch, hidden", [(1, 37), (7, 33), (16, 64)])
def test_one_step_backward_in_float32_matches_float64(batch, hidden):
    """The one-step backward's d h_0 = d gates @ W_hh (W_hh read along its rows: 4-row blocks, leftover
    rows and leftover inner steps) in float32 against float64, for every family."""
    rng = np.random.default_rng(batch + hidden)
    for op, gates in (("lstm", 4), ("gru", 3), ("rnn", 1)):
        p, h0, c0, w, b = _arrays(rng, np.float64, (1, batch, gates * hidden), (batch, hidden), (batch, hidden), (gates * hidden, hidden), (gates * hidden,))
        g = rng.standard_normal((2 if op == "lstm" else 1, batch, hidden))
        results = []
        for dtype in (np.float64, np.float32):
            p_, h0_, c0_, w_, b_, g_ = (a.astype(dtype) for a in (p, h0, c0, w, b, g))
            if op == "lstm":
                out, _ = _lstm_forward(p_, h0_, c0_, w_)
                res = recurrent.lstm_sequence_backward(g_, out, c0_, w_, np.empty(6 * batch * hidden, dtype))
            elif op == "gru":
                out = recurrent.gru_sequence_forward(p_, h0_, w_, b_, np.empty((1, batch, 5 * hidden), dtype))
                res = recurrent.gru_sequence_backward(g_, out, h0_, w_, np.empty(7 * batch * hidden, dtype))
            else:
                out = recurrent.rnn_sequence_forward(p_, h0_, w_, np.empty((1, batch, hidden), dtype), False)
                res = recurrent.rnn_sequence_backward(g_, out, w_, np.empty(2 * batch * hidden, dtype), False)
            results.append(res)
        np.testing.assert_allclose(results[1], results[0], rtol=2e-4, atol=2e-4, err_msg=op)


def _run_every_sequence_kernel(rng, dtype, steps, batch, hidden):
    """Forward and backward of the LSTM, GRU and RNN kernels over random arrays."""
    from numdiff.kernels._recurrent_layout import backward_size

    for op, gates, width in (("lstm", 4, 5), ("gru", 3, 5), ("rnn", 1, 1)):
        projected, h0, c0 = _arrays(rng, dtype, (steps, batch, gates * hidden), (batch, hidden), (batch, hidden))
        w_hh = 0.1 * _arrays(rng, dtype, (gates * hidden, hidden))[0]
        out = np.empty((steps, batch, width * hidden), dtype)
        res = np.empty(backward_size(op, steps, batch, hidden), dtype)
        if op == "lstm":
            recurrent.lstm_sequence_forward(projected, h0, c0, w_hh, out, np.empty((steps + 1, batch, hidden), dtype))
            recurrent.lstm_sequence_backward(_arrays(rng, dtype, (steps + 1, batch, hidden))[0], out, c0, w_hh, res)
        elif op == "gru":
            recurrent.gru_sequence_forward(projected, h0, w_hh, np.zeros(gates * hidden, dtype), out)
            recurrent.gru_sequence_backward(_arrays(rng, dtype, (steps, batch, hidden))[0], out, h0, w_hh, res)
        else:
            recurrent.rnn_sequence_forward(projected, h0, w_hh, out, False)
            recurrent.rnn_sequence_backward(_arrays(rng, dtype, (steps, batch, hidden))[0], out, w_hh, res, False)


@pytest.mark.parametrize("steps, batch, hidden", [(16, 16, 128), (13, 20, 72)])
def test_float32_sequences_whose_step_products_go_in_tiles_match_the_float64_kernels(steps, batch, hidden):
    """Batch 16, H 128 (16 x 128 by 128 x 512 forward, 16 x 512 by 512 x 128 backward: past OpenBLAS's
    small-matrix size, so cut into tiles, numdiff.kernels._gemm_tiles) and an odd shape: every float32
    forward and backward kernel against the same kernel in float64 (dgemm, no tiles) and the
    forwards against the NumPy loops."""
    from numdiff.kernels._recurrent_layout import backward_size

    rng = np.random.default_rng(steps)
    for op, gates, width in (("lstm", 4, 5), ("gru", 3, 5), ("rnn", 1, 1)):
        p, h0, c0, g = _arrays(rng, np.float64, (steps, batch, gates * hidden), (batch, hidden), (batch, hidden), (steps + 1, batch, hidden))
        w = _arrays(rng, np.float64, (gates * hidden, hidden))[0] / np.sqrt(hidden)
        results = {}
        for dtype in (np.float32, np.float64):
            a = [x.astype(dtype) for x in (p, h0, c0, w, g)]
            out = np.empty((steps, batch, width * hidden), dtype)
            res = np.empty(backward_size(op, steps, batch, hidden), dtype)
            if op == "lstm":
                hs = recurrent.lstm_sequence_forward(a[0], a[1], a[2], a[3], out, np.empty((steps + 1, batch, hidden), dtype))
                recurrent.lstm_sequence_backward(a[4], out, a[2], a[3], res)
            elif op == "gru":
                recurrent.gru_sequence_forward(a[0], a[1], a[3], np.zeros(gates * hidden, dtype), out)
                recurrent.gru_sequence_backward(a[4][:steps].copy(), out, a[1], a[3], res)
            else:
                recurrent.rnn_sequence_forward(a[0], a[1], a[3], out, False)
                recurrent.rnn_sequence_backward(a[4][:steps].copy(), out, a[3], res, False)
            results[dtype] = (out, res) if op != "lstm" else (out, res, hs)
        if op == "lstm":
            reference = lstm_record_reference(p, h0, c0, w)
            np.testing.assert_allclose(results[np.float64][2], lstm_reference(p, h0, c0, w), rtol=1e-12, atol=1e-12)
        elif op == "gru":
            reference = gru_record_reference(p, h0, w, np.zeros(gates * hidden))
        else:
            reference = rnn_reference(p, h0, w, False)
        np.testing.assert_allclose(results[np.float64][0], reference, rtol=1e-12, atol=1e-12)
        for single, double in zip(results[np.float32], results[np.float64]):
            np.testing.assert_allclose(single, double, rtol=1e-4, atol=1e-4)


def test_step_products_compile_one_version_per_dtype_whatever_the_layouts():
    """The steps that take dot products (a forward over few rows) call add_products_nt on C-contiguous
    rows only, the rest call gemm, built once per dtype: each layout the kernels passed would compile
    one more version, ~1 s each of an empty cache's first call."""

    def float64_signatures(kernel):  # called by address: its builds are the dispatcher's
        return {sig for sig in kernel.dispatcher.signatures if sig[-1].dtype == numba.float64}

    before = float64_signatures(add_products_nt)
    rng = np.random.default_rng(5)
    # 64 x 4 steps read rows of W_hh^T forward (gemm), 2 x 4 and 1 x 4 take dot products (add_products_nt).
    for steps in (64, 2, 1):
        assert forward_reads_transposed(steps * 4, np.empty((4 * 8, 8))) == (steps == 64)
        _run_every_sequence_kernel(rng, np.float64, steps, 4, 8)
    new = float64_signatures(add_products_nt) - before
    assert len(new) <= 1 and all(arg.layout == "C" for sig in new for arg in sig)
