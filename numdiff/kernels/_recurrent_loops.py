"""The loop nests of the recurrent kernels (numdiff.kernels.recurrent, which checks the arguments,
documents the layouts and calls these): the LSTM over a whole sequence and its backward through
time, for a run of batch rows ``lo:hi``, and the helpers the GRU and RNN loop nests
(numdiff.kernels._gru_rnn_loops) share with it.

Loop nest per step: the product (on the thread of the part), then n over the batch, j over H in
loops that vectorise (contiguous rows, gate functions from numdiff.kernels._gate_math), 512 bits
wide where the core has AVX-512 (`wide_kernel`). Each step's gate loops are a function of their
own, and a loop writes at most a few outputs: compiled into one function with the product, the
LSTM forward's gate loops ran scalar (19.5 ms against 6 ms for 64 steps x 16 x 128), and so did
the GRU forward's and the LSTM backward's five-output loops (GRU forward 10.3 -> 4.1 ms, LSTM
backward 7.3 -> 3.9 ms once split; float32, one thread). Extra memory:
one (N, G) step buffer, the (N, H) running states and, forward over a sequence, W_hh^T.

Parallel: over the batch, never within a step. A recurrence's batch rows never meet, so each
``*_parts`` kernel gives each thread a run of rows (``bounds``, whole 4-row blocks of the
product) for which it walks every step: one parallel region per sequence. Splitting each step's
product and gates instead needs a barrier per step, and at 16 x 512 per step a region costs more
than the step.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._blas import gemm
from numdiff.kernels._gate_math import sigmoid, tanh, wide_kernel
from numdiff.kernels._kernel_address import by_address
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._row_products import add_step_product, forward_reads_transposed
from numdiff.kernels._self_healing_cache import njit

__all__ = ["LSTM_BACKWARD", "LSTM_FORWARD"]


# error_model="numpy": no ZeroDivisionError branch in the sigmoid's division, so the j loops
# vectorise (with the gate functions of numdiff.kernels._gate_math: the LSTM gates of 64 steps x 16 x
# 128 in float32 took 6.5 ms with the C library's exp and tanh, 2.2 ms with _vecmath's, whose float32
# tanh and sigmoid finish in float64, and 1.45 ms with _gate_math's, float32 throughout). Literals in
# the loops take the arrays' dtype (``one``): a Python 1.0 is a float64 and would widen them too.
_OPTIONS = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
_PARTS_OPTIONS = {name: value for name, value in _OPTIONS.items() if name != "cache"}  # serial_and_parallel adds it


@njit(inline="always", **_OPTIONS)
def _copy_into(x, y):
    """y[j] = x[j] over two equal-length vectors. The kernels copy rows with this loop, never an
    array-to-array slice assignment (``y[:] = x``): Numba's setitem compiles a shape check whose
    error message (string formatting, joins) took 3.3 of the char LSTM's 24 s of first-call
    build (CPU seconds, empty cache), and the loop runs the same copy."""
    for j in range(y.shape[0]):
        y[j] = x[j]


@njit(inline="always", **_OPTIONS)
def _copy_rows_into(x, y):
    """y[m] = x[m] for every row of two equal-shape 2-D arrays (see `_copy_into`)."""
    for m in range(y.shape[0]):
        _copy_into(x[m], y[m])


_TILE = 16


@by_address
@njit(**_OPTIONS)
def _transposed(w):
    """W^T, C-contiguous, (G, H) -> (H, G), copied in 16 x 16 tiles: a forward's steps read W_hh^T.

    Loop nest: tiles of rows, tiles of columns, then j and i inside a tile; serial. A row-by-row copy
    (np.ascontiguousarray(w.T)) writes columns 4H floats apart, which for a power-of-two H fall into the
    same few cache sets: 2.5 ms for W_hh of an LSTM with H = 512 (float32, against 0.47 ms for H = 480),
    paid once per forward over a sequence. Tiled: 0.52 ms at H = 512, 0.30 ->
    0.14 at H = 256, 0.036 -> 0.033 at H = 128; where H is no power of two the row-by-row copy was a
    little faster (H = 200: 0.060 against 0.083 ms, H = 480: 0.40 against 0.46), under 0.2 % of a
    word-level LSTM's training step. Tiles of 8, 32 and 64 took 0.61, 0.97 and 1.08 ms at H = 512."""
    rows, cols = w.shape
    out = np.empty((cols, rows), dtype=w.dtype)
    for i0 in range(0, rows, _TILE):
        i1 = min(i0 + _TILE, rows)
        for j0 in range(0, cols, _TILE):
            for j in range(j0, min(j0 + _TILE, cols)):
                for i in range(i0, i1):
                    out[j, i] = w[i, j]
    return out


@by_address
@njit(**_OPTIONS)
def _forward_weight(projected, w_hh):
    """The forward's second copy of the weight: W_hh^T where the step products read its rows
    (numdiff.kernels._row_products.forward_reads_transposed), else an array of no rows."""
    if forward_reads_transposed(projected.shape[0] * projected.shape[1], w_hh):
        return _transposed(w_hh)
    return np.empty((0, w_hh.shape[0]), w_hh.dtype)


# --------------------------------------------------------------------------- LSTM
@njit(inline="always", **_OPTIONS)
def _sigmoid_into(x, y):
    """y[j] = sigmoid(x[j]) over two equal-length vectors."""
    for j in range(y.shape[0]):
        y[j] = sigmoid(x[j])


@njit(inline="always", **_OPTIONS)
def _tanh_into(x, y):
    """y[j] = tanh(x[j]) over two equal-length vectors."""
    for j in range(y.shape[0]):
        y[j] = tanh(x[j])


@by_address
@njit(**_OPTIONS)
def _lstm_gates(pre, c0, t, record, hs, lo):
    """Step t's gates from pre (rows lo.., 4H) = the gates before activation: record[t, lo..] (5H)
    and hs[t, lo..] (h_t) written, reading c_{t-1} from record[t - 1] (c0 at t = 0). Activated
    straight into the record, not in place and then copied: 1.45 -> 1.05 ms for the gates of 64
    steps x 16 x 128, float32.

    Every gate block is a view of its own, indexed from 0: with offset indices
    (``row[2 * hidden + j] = sigmoid(a[j])``) the same loops took 235 us for the gates of 40 steps
    x 24 x 64 in float32, with views 103 us (one thread, thread CPU time). The GRU and LSTM
    backward loops measured no faster written this way, so they keep their offset indices."""
    wide_kernel()
    rows, gates = pre.shape
    hidden = gates // 4
    for m in range(rows):
        n = lo + m
        a = pre[m]
        row = record[t, n]
        c_prev = c0[n] if t == 0 else record[t - 1, n, :hidden]
        h = hs[t, n]
        c = row[:hidden]
        i, f, g, o = row[hidden : 2 * hidden], row[2 * hidden : 3 * hidden], row[3 * hidden : 4 * hidden], row[4 * hidden :]
        _sigmoid_into(a[: 2 * hidden], row[hidden : 3 * hidden])
        _tanh_into(a[2 * hidden : 3 * hidden], g)
        _sigmoid_into(a[3 * hidden :], o)
        for j in range(hidden):
            c[j] = f[j] * c_prev[j] + i[j] * g[j]
        for j in range(hidden):
            h[j] = o[j] * tanh(c[j])


@by_address
@njit(**_OPTIONS)
def _lstm_forward(projected, h0, c0, w_hh, w_t, record, hs, lo, hi):
    """Batch rows lo:hi of the whole sequence; w_t = W_hh^T, or no rows (numdiff.kernels._row_products.add_step_product).
    Each step's product reads h_{t-1} from hs, where the gates wrote it; c_L goes to hs's last row."""
    steps, _, gates = projected.shape
    hidden = gates // 4
    pre = np.empty((hi - lo, gates), projected.dtype)
    for t in range(steps):
        _copy_rows_into(projected[t, lo:hi], pre)
        add_step_product(h0[lo:hi] if t == 0 else hs[t - 1, lo:hi], w_hh, w_t, pre)
        _lstm_gates(pre, c0, t, record, hs, lo)
    _copy_rows_into(record[steps - 1, lo:hi, :hidden], hs[steps, lo:hi])


def _lstm_forward_parts(projected, h0, c0, w_hh, record, hs, bounds):
    w_t = _forward_weight(projected, w_hh)
    for part in prange(bounds.shape[0] - 1):
        _lstm_forward(projected, h0, c0, w_hh, w_t, record, hs, bounds[part], bounds[part + 1])


LSTM_FORWARD = serial_and_parallel(_lstm_forward_parts, **_PARTS_OPTIONS)


@by_address
@njit(**_OPTIONS)
def _lstm_backward_step(grad, record, c0, t, dh_state, dc_state, d_gates, lo, hi):
    """Step t's gate gradients of batch rows lo:hi into d_gates[t], from grad[t] (d h_t, (N, H));
    dc_state becomes d c_{t-1} (d h_{t-1} is the product's)."""
    hidden = record.shape[2] // 5
    one = record.dtype.type(1.0)  # a Python 1.0 would make the loops float64 (half the lanes) for float32
    for n in range(lo, hi):
        c_prev = c0[n] if t == 0 else record[t - 1, n, :hidden]
        row = record[t, n]
        g_row = grad[t, n]
        r_row = d_gates[t, n]
        dh_in = dh_state[n]
        dc_in = dc_state[n]
        # Two loops, d c_t first (kept in dc_in), then the gates from it: as one loop writing five
        # outputs LLVM left it scalar.
        for j in range(hidden):
            dh = g_row[j] + dh_in[j]
            o = row[4 * hidden + j]
            tanh_c = tanh(row[j])
            r_row[3 * hidden + j] = dh * tanh_c * o * (one - o)
            dc_in[j] = dc_in[j] + dh * o * (one - tanh_c * tanh_c)
        for j in range(hidden):
            dc = dc_in[j]
            i = row[hidden + j]
            f = row[2 * hidden + j]
            g = row[3 * hidden + j]
            r_row[j] = dc * g * i * (one - i)
            r_row[hidden + j] = dc * c_prev[j] * f * (one - f)
            r_row[2 * hidden + j] = dc * i * (one - g * g)
            dc_in[j] = dc * f


@by_address
@njit(**_OPTIONS)
def _lstm_backward(grad, record, c0, w_hh, d_gates, dh_state, dc_state, lo, hi):
    """Batch rows lo:hi. dh_state (N, H) zeros and dc_state (N, H) d c_n on entry (d h_t and d c_t
    from the steps after t), d h_0 and d c_0 on return. Each step's d h_{t-1} = d gates_t @ W_hh is
    one gemm (beta 0 overwrites the state)."""
    for t in range(record.shape[0] - 1, -1, -1):
        _lstm_backward_step(grad, record, c0, t, dh_state, dc_state, d_gates, lo, hi)
        gemm(False, False, 1.0, d_gates[t, lo:hi], w_hh, 0.0, dh_state[lo:hi])


def _lstm_backward_parts(grad, record, c0, w_hh, d_gates, dh_state, dc_state, bounds):
    for part in prange(bounds.shape[0] - 1):
        _lstm_backward(grad, record, c0, w_hh, d_gates, dh_state, dc_state, bounds[part], bounds[part + 1])


LSTM_BACKWARD = serial_and_parallel(_lstm_backward_parts, **_PARTS_OPTIONS)
