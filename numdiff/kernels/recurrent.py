"""Recurrent-layer kernels (CPU, Numba): RNN, LSTM and GRU over a whole sequence, and their
backward through time.

Each forward takes the input half of every gate already computed (``projected``, shape (L, N, G):
one GEMM batched over time, done by the caller) and runs the time loop here: per step one
product ``h_{t-1} @ W_hh^T`` (:func:`numdiff.kernels._row_products.add_products_nt`, register-
blocked dot products added straight into the step's gate block) and one fused loop over the
gates. Backward walks the steps in reverse with one product ``dgates_t @ W_hh`` per step, reading
W_hh^T, copied once per sequence. No Python runs per step.

Layouts (H hidden size; every array C-contiguous, one float dtype):

* LSTM, gates i, f, g, o. ``out`` (L, N, 6H) = [h_t, c_t, i, f, g, o] with the gates activated.
  Backward writes ``res``, flat: [d(pre-activation gates) (L, N, 4H) | d h_0 (N, H) | d c_0 (N, H)].
* GRU, gates r, z, n. ``out`` (L, N, 5H) = [h_t, r, z, n, hn] with ``hn = h_{t-1} W_hn^T + b_hn``.
  Backward writes ``res``, flat: [[d r_pre, d z_pre, d n_pre] (L, N, 3H) | [d r_pre, d z_pre, d hn]
  (L, N, 3H) | d h_0 (N, H)]: the gradient of projected, the operand of W_hh's and b_hh's gradients.
* RNN (tanh or relu). ``out`` (L, N, H) = h_t. Backward writes ``res``, flat: [d pre (L, N, H) | d h_0 (N, H)].

Each block of a backward's ``res`` is C-contiguous, so the caller takes them as views: the weight
gradients' GEMMs read the gate gradients in place (a block strided inside an (L, N, 6H) result
was copied first, 0.4 ms of the char LSTM's step), and no step's d h_{t-1} is stored, only h_0's.

``grad`` (the gradient of ``out``) has out's shape: every block of ``out`` may carry a gradient,
so the kernels are the exact adjoint of the forward, not only of h. The weight gradients are one
GEMM each over the whole sequence, left to the caller.

Loop nest per step: the product (calling thread), then n over the batch, j over H in loops that
vectorise (contiguous rows, gate functions from numdiff.kernels._gate_math). Each step's gate loops
are a function of their own, and a loop writes at most a few outputs: compiled into one function
with the product, the LSTM forward's gate loops ran scalar (19.5 ms against 6 ms for 64 steps x
16 x 128), and so did the GRU forward's and the LSTM backward's five-output loops (GRU forward
10.3 -> 4.1 ms, LSTM backward 7.3 -> 3.9 ms once split; float32, one thread). Extra memory:
one (N, G) step buffer, the (N, H) running states and, backward, W_hh^T. Parallel: none; at the sizes
of a recurrent step (16 x 512) a parallel region costs more than the step.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._checks import check_disjoint, check_float_arrays, check_shape
from numdiff.kernels._gate_math import sigmoid, tanh
from numdiff.kernels._parallel import KernelPair, serial_and_parallel
from numdiff.kernels._recurrent_layout import backward_blocks, backward_size, split
from numdiff.kernels._row_products import add_products_nt
from numdiff.kernels._self_healing_cache import njit

__all__ = [
    "gru_sequence_backward",
    "gru_sequence_forward",
    "lstm_sequence_backward",
    "lstm_sequence_forward",
    "rnn_sequence_backward",
    "rnn_sequence_forward",
]


# error_model="numpy": no ZeroDivisionError branch in the sigmoid's division, so the j loops
# vectorise (with the gate functions of numdiff.kernels._gate_math: the LSTM gates of 64 steps x 16 x
# 128 in float32 took 6.5 ms with the C library's exp and tanh, 2.2 ms with _vecmath's, whose float32
# tanh and sigmoid finish in float64, and 1.45 ms with _gate_math's, float32 throughout). Literals in
# the loops take the arrays' dtype (``one``): a Python 1.0 is a float64 and would widen them too.
_OPTIONS = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
_PARTS_OPTIONS = {name: value for name, value in _OPTIONS.items() if name != "cache"}  # serial_and_parallel adds it

RECURRENT_GRAIN = 1 << 22
"""Multiply-adds of a whole sequence's recurrent products (steps x batch x gates x hidden) from
which its kernel splits the batch between threads: one parallel region per sequence, not per
step, so a few microseconds against the ~100 us of work at the grain."""


# --------------------------------------------------------------------------- LSTM
@njit(**_OPTIONS)
def _lstm_gates(pre, c0, t, out, lo):
    """Step t's gates from pre (rows lo.., 4H) = the gates before activation: out[t, lo..] (6H)
    written, reading c_{t-1} from out[t - 1] (c0 at t = 0). Activated straight into out, not in
    place and then copied: 1.45 -> 1.05 ms for the gates of 64 steps x 16 x 128, float32."""
    rows, gates = pre.shape
    hidden = gates // 4
    for m in range(rows):
        n = lo + m
        a = pre[m]
        row = out[t, n]
        c_prev = c0[n] if t == 0 else out[t - 1, n, hidden : 2 * hidden]
        for j in range(2 * hidden):
            row[2 * hidden + j] = sigmoid(a[j])
        for j in range(2 * hidden, 3 * hidden):
            row[2 * hidden + j] = tanh(a[j])
        for j in range(3 * hidden, gates):
            row[2 * hidden + j] = sigmoid(a[j])
        for j in range(hidden):
            row[hidden + j] = row[3 * hidden + j] * c_prev[j] + row[2 * hidden + j] * row[4 * hidden + j]
        for j in range(hidden):
            row[j] = row[5 * hidden + j] * tanh(row[hidden + j])


@njit(**_OPTIONS)
def _lstm_forward(projected, h0, c0, w_hh, out, lo, hi):
    """Batch rows lo:hi of the whole sequence."""
    steps, _, gates = projected.shape
    hidden = gates // 4
    pre = np.empty((hi - lo, gates), projected.dtype)
    for t in range(steps):
        pre[:, :] = projected[t, lo:hi]
        add_products_nt(h0[lo:hi] if t == 0 else out[t - 1, lo:hi, :hidden], w_hh, pre)
        _lstm_gates(pre, c0, t, out, lo)


def _lstm_forward_parts(projected, h0, c0, w_hh, out, bounds):
    for part in prange(bounds.shape[0] - 1):
        _lstm_forward(projected, h0, c0, w_hh, out, bounds[part], bounds[part + 1])


_LSTM_FORWARD = serial_and_parallel(_lstm_forward_parts, **_PARTS_OPTIONS)


@njit(**_OPTIONS)
def _lstm_backward_step(grad, out, c0, t, dh_state, dc_state, d_gates, lo, hi):
    """Step t's gate gradients of batch rows lo:hi into d_gates[t]; dc_state becomes d c_{t-1} (d
    h_{t-1} is the product's)."""
    hidden = out.shape[2] // 6
    one = out.dtype.type(1.0)  # a Python 1.0 would make the loops float64 (half the lanes) for float32
    for n in range(lo, hi):
        c_prev = c0[n] if t == 0 else out[t - 1, n, hidden : 2 * hidden]
        row = out[t, n]
        g_row = grad[t, n]
        r_row = d_gates[t, n]
        dh_in = dh_state[n]
        dc_in = dc_state[n]
        # Two loops, d c_t first (kept in dc_in), then the gates from it: as one loop writing five
        # outputs LLVM left it scalar.
        for j in range(hidden):
            dh = g_row[j] + dh_in[j]
            o = row[5 * hidden + j]
            tanh_c = tanh(row[hidden + j])
            do = dh * tanh_c + g_row[5 * hidden + j]
            r_row[3 * hidden + j] = do * o * (one - o)
            dc_in[j] = g_row[hidden + j] + dc_in[j] + dh * o * (one - tanh_c * tanh_c)
        for j in range(hidden):
            dc = dc_in[j]
            i = row[2 * hidden + j]
            f = row[3 * hidden + j]
            g = row[4 * hidden + j]
            r_row[j] = (dc * g + g_row[2 * hidden + j]) * i * (one - i)
            r_row[hidden + j] = (dc * c_prev[j] + g_row[3 * hidden + j]) * f * (one - f)
            r_row[2 * hidden + j] = (dc * i + g_row[4 * hidden + j]) * (one - g * g)
            dc_in[j] = dc * f


@njit(**_OPTIONS)
def _lstm_backward(grad, out, c0, w_t, d_gates, dh_state, dc_state, lo, hi):
    """Batch rows lo:hi. dh_state, dc_state (N, H) zeros on entry (d h_t and d c_t from the steps
    after t), d h_0 and d c_0 on return; w_t = W_hh^T, C-contiguous."""
    for t in range(out.shape[0] - 1, -1, -1):
        _lstm_backward_step(grad, out, c0, t, dh_state, dc_state, d_gates, lo, hi)
        dh_state[lo:hi, :] = 0.0
        add_products_nt(d_gates[t, lo:hi], w_t, dh_state[lo:hi])


def _lstm_backward_parts(grad, out, c0, w_hh, d_gates, dh_state, dc_state, bounds):
    w_t = np.ascontiguousarray(w_hh.T)  # d h_{t-1} = d gates @ w_hh, as rows of w_hh^T
    for part in prange(bounds.shape[0] - 1):
        _lstm_backward(grad, out, c0, w_t, d_gates, dh_state, dc_state, bounds[part], bounds[part + 1])


_LSTM_BACKWARD = serial_and_parallel(_lstm_backward_parts, **_PARTS_OPTIONS)


# --------------------------------------------------------------------------- GRU
@njit(**_OPTIONS)
def _gru_gates(projected, h0, hidden_part, t, out, lo):
    """Step t's gates from projected[t] and hidden_part = h_{t-1} W_hh^T + b_hh (batch rows lo..),
    into out[t]."""
    rows, gates = hidden_part.shape
    hidden = gates // 3
    for m in range(rows):
        n = lo + m
        h_prev = h0[n] if t == 0 else out[t - 1, n, :hidden]
        row = out[t, n]
        x = projected[t, n]
        a = hidden_part[m]
        # One loop per gate: with all five outputs written in one loop LLVM left it scalar.
        for j in range(hidden):
            row[hidden + j] = sigmoid(x[j] + a[j])
        for j in range(hidden):
            row[2 * hidden + j] = sigmoid(x[hidden + j] + a[hidden + j])
        for j in range(hidden):
            row[3 * hidden + j] = tanh(x[2 * hidden + j] + row[hidden + j] * a[2 * hidden + j])
        row[4 * hidden :] = a[2 * hidden :]
        for j in range(hidden):
            n_gate = row[3 * hidden + j]
            row[j] = n_gate + row[2 * hidden + j] * (h_prev[j] - n_gate)


@njit(**_OPTIONS)
def _gru_forward(projected, h0, w_hh, b_hh, out, lo, hi):
    """Batch rows lo:hi of the whole sequence."""
    steps, _, gates = projected.shape
    hidden = gates // 3
    hidden_part = np.empty((hi - lo, gates), projected.dtype)
    for t in range(steps):
        for m in range(hi - lo):
            hidden_part[m, :] = b_hh
        add_products_nt(h0[lo:hi] if t == 0 else out[t - 1, lo:hi, :hidden], w_hh, hidden_part)
        _gru_gates(projected, h0, hidden_part, t, out, lo)


def _gru_forward_parts(projected, h0, w_hh, b_hh, out, bounds):
    for part in prange(bounds.shape[0] - 1):
        _gru_forward(projected, h0, w_hh, b_hh, out, bounds[part], bounds[part + 1])


_GRU_FORWARD = serial_and_parallel(_gru_forward_parts, **_PARTS_OPTIONS)


@njit(**_OPTIONS)
def _gru_backward_step(grad, out, h0, t, dh_state, d_hidden, d_pre, lo, hi):
    """Step t's gradients of batch rows lo:hi into d_pre[t] = [d r_pre, d z_pre, d n_pre] and
    d_hidden[t] = [d r_pre, d z_pre, d hn]; dh_state becomes the part of d h_{t-1} that does not go
    through W_hh."""
    hidden = out.shape[2] // 5
    one = out.dtype.type(1.0)  # as in _lstm_backward_step
    for n in range(lo, hi):
        h_prev = h0[n] if t == 0 else out[t - 1, n, :hidden]
        row = out[t, n]
        g_row = grad[t, n]
        r_row = d_pre[t, n]
        d_h = d_hidden[t, n]
        dh_in = dh_state[n]
        for j in range(hidden):
            dh = g_row[j] + dh_in[j]
            r = row[hidden + j]
            z = row[2 * hidden + j]
            n_gate = row[3 * hidden + j]
            hn = row[4 * hidden + j]
            dn = dh * (one - z) + g_row[3 * hidden + j]
            dz = dh * (h_prev[j] - n_gate) + g_row[2 * hidden + j]
            dn_pre = dn * (one - n_gate * n_gate)
            dhn = dn_pre * r + g_row[4 * hidden + j]
            dr = dn_pre * hn + g_row[hidden + j]
            d_h[j] = dr * r * (one - r)
            d_h[hidden + j] = dz * z * (one - z)
            d_h[2 * hidden + j] = dhn
            r_row[2 * hidden + j] = dn_pre
            dh_in[j] = dh * z
        r_row[: 2 * hidden] = d_h[: 2 * hidden]


@njit(**_OPTIONS)
def _gru_backward(grad, out, h0, w_t, d_pre, d_hidden, dh_state, lo, hi):
    """Batch rows lo:hi. dh_state (N, H) zeros on entry (d h_t from the steps after t), d h_0 on
    return; w_t = W_hh^T, C-contiguous."""
    for t in range(out.shape[0] - 1, -1, -1):
        _gru_backward_step(grad, out, h0, t, dh_state, d_hidden, d_pre, lo, hi)
        add_products_nt(d_hidden[t, lo:hi], w_t, dh_state[lo:hi])


def _gru_backward_parts(grad, out, h0, w_hh, d_pre, d_hidden, dh_state, bounds):
    w_t = np.ascontiguousarray(w_hh.T)  # d h_{t-1} = d gates @ w_hh, as rows of w_hh^T
    for part in prange(bounds.shape[0] - 1):
        _gru_backward(grad, out, h0, w_t, d_pre, d_hidden, dh_state, bounds[part], bounds[part + 1])


_GRU_BACKWARD = serial_and_parallel(_gru_backward_parts, **_PARTS_OPTIONS)


# --------------------------------------------------------------------------- RNN
@njit(**_OPTIONS)
def _rnn_activate(out_t, relu, lo, hi):
    hidden = out_t.shape[1]
    zero = out_t.dtype.type(0.0)
    for n in range(lo, hi):
        row = out_t[n]
        if relu:
            for j in range(hidden):
                row[j] = max(row[j], zero)
        else:
            for j in range(hidden):
                row[j] = tanh(row[j])


@njit(**_OPTIONS)
def _rnn_forward(projected, h0, w_hh, relu, out, lo, hi):
    """Batch rows lo:hi of the whole sequence."""
    for t in range(projected.shape[0]):
        out[t, lo:hi] = projected[t, lo:hi]
        add_products_nt(h0[lo:hi] if t == 0 else out[t - 1, lo:hi], w_hh, out[t, lo:hi])
        _rnn_activate(out[t], relu, lo, hi)


def _rnn_forward_parts(projected, h0, w_hh, relu, out, bounds):
    for part in prange(bounds.shape[0] - 1):
        _rnn_forward(projected, h0, w_hh, relu, out, bounds[part], bounds[part + 1])


_RNN_FORWARD = serial_and_parallel(_rnn_forward_parts, **_PARTS_OPTIONS)


@njit(**_OPTIONS)
def _rnn_backward_step(grad_t, out_t, dh_state, res_t, relu, lo, hi):
    hidden = out_t.shape[1]
    one, zero = out_t.dtype.type(1.0), out_t.dtype.type(0.0)  # as in _lstm_backward_step
    for n in range(lo, hi):
        row = out_t[n]
        g_row = grad_t[n]
        r_row = res_t[n]
        dh_in = dh_state[n]
        for j in range(hidden):
            dh = g_row[j] + dh_in[j]
            r_row[j] = (dh if row[j] > zero else zero) if relu else dh * (one - row[j] * row[j])


@njit(**_OPTIONS)
def _rnn_backward(grad, out, w_t, relu, d_pre, dh_state, lo, hi):
    """Batch rows lo:hi. dh_state (N, H) zeros on entry (d h_t from the steps after t), d h_0 on
    return; w_t = W_hh^T, C-contiguous."""
    for t in range(out.shape[0] - 1, -1, -1):
        _rnn_backward_step(grad[t], out[t], dh_state, d_pre[t], relu, lo, hi)
        dh_state[lo:hi, :] = 0.0
        add_products_nt(d_pre[t, lo:hi], w_t, dh_state[lo:hi])


def _rnn_backward_parts(grad, out, w_hh, relu, d_pre, dh_state, bounds):
    w_t = np.ascontiguousarray(w_hh.T)  # d h_{t-1} = d gates @ w_hh, as rows of w_hh^T
    for part in prange(bounds.shape[0] - 1):
        _rnn_backward(grad, out, w_t, relu, d_pre, dh_state, bounds[part], bounds[part + 1])


_RNN_BACKWARD = serial_and_parallel(_rnn_backward_parts, **_PARTS_OPTIONS)


# --------------------------------------------------------------------------- checked entry points
def batch_bounds(batch: int, parts: int) -> np.ndarray:
    """Row bounds splitting a batch of `batch` rows into at most `parts` runs, each (but the last)
    a multiple of 4 rows, the product's block height (numdiff.kernels._row_products), and none
    shorter than 4 rows: ``batch_bounds(20, 2)`` is [0, 8, 20], ``batch_bounds(6, 2)`` [0, 6]."""
    parts = max(1, min(parts, batch // 4))
    blocks = -(-batch // 4)
    return np.array([min(batch, 4 * (blocks * part // parts)) for part in range(parts + 1)], dtype=np.int64)


def _run(pair: KernelPair, steps: int, batch: int, per_row_step: int, *arrays) -> None:
    """Run a sequence kernel pair over the batch rows, split between Numba's threads when the
    recurrence has RECURRENT_GRAIN multiply-adds or more (each part runs every step for its rows:
    the rows of a recurrence never meet, so the parts need no barrier between steps)."""
    kernel, parts = pair.pick(steps * batch * per_row_step, RECURRENT_GRAIN)
    bounds = batch_bounds(batch, parts)
    (pair.serial if bounds.shape[0] == 2 else kernel)(*arrays, bounds)


def _check_sequence(op: str, gates: int, projected: np.ndarray, w_hh: np.ndarray) -> tuple[int, int, int]:
    if projected.ndim != 3:
        raise ValueError(f"{op}: projected must be 3-D (L, N, {gates}*H), got shape {projected.shape}")
    steps, batch, width = projected.shape
    if width % gates or w_hh.shape != (width, width // gates):
        raise ValueError(
            f"{op}: projected (L, N, {gates}*H) and w_hh ({gates}*H, H) disagree: {projected.shape} and {w_hh.shape}"
        )
    return steps, batch, width // gates


def lstm_sequence_forward(projected: np.ndarray, h0: np.ndarray, c0: np.ndarray, w_hh: np.ndarray, out: np.ndarray) -> np.ndarray:
    """LSTM over a sequence: ``out`` (L, N, 6H) <- [h, c, i, f, g, o] per step.

    Shapes: projected (L, N, 4H) = x W_ih^T + b_ih + b_hh, h0 and c0 (N, H), w_hh (4H, H).

    >>> out = lstm_sequence_forward(np.zeros((2, 1, 4)), np.zeros((1, 1)), np.ones((1, 1)), np.zeros((4, 1)), np.empty((2, 1, 6)))
    >>> round(float(out[0, 0, 1]), 3)   # c_1 = f * c_0 + i * g = 0.5
    0.5
    """
    check_float_arrays("lstm_sequence_forward", projected=projected, h0=h0, c0=c0, w_hh=w_hh, out=out)
    steps, batch, hidden = _check_sequence("lstm_sequence_forward", 4, projected, w_hh)
    for name, state in (("h0", h0), ("c0", c0)):
        check_shape("lstm_sequence_forward", name, state, (batch, hidden))
    check_shape("lstm_sequence_forward", "out", out, (steps, batch, 6 * hidden))
    check_disjoint("lstm_sequence_forward", {"out": out}, {"projected": projected, "h0": h0, "c0": c0, "w_hh": w_hh})
    _run(_LSTM_FORWARD, steps, batch, 4 * hidden * hidden, projected, h0, c0, w_hh, out)
    return out


def _backward_result(op: str, res: np.ndarray, steps: int, batch: int, hidden: int) -> list[np.ndarray]:
    """The blocks of a backward's flat ``res`` (numdiff.kernels._recurrent_layout), checked."""
    check_shape(f"{op}_sequence_backward", "res", res, (backward_size(op, steps, batch, hidden),))
    return split(res, backward_blocks(op, steps, batch, hidden))


def lstm_sequence_backward(grad: np.ndarray, out: np.ndarray, c0: np.ndarray, w_hh: np.ndarray, res: np.ndarray) -> np.ndarray:
    """Backward through time of :func:`lstm_sequence_forward`: ``res`` (flat) <- [d gates before
    activation (L, N, 4H) | d h_0 (N, H) | d c_0 (N, H)] from ``grad`` (L, N, 6H), the gradient of ``out``."""
    check_float_arrays("lstm_sequence_backward", grad=grad, out=out, c0=c0, w_hh=w_hh, res=res)
    steps, batch, width = out.shape
    hidden = width // 6
    check_shape("lstm_sequence_backward", "w_hh", w_hh, (4 * hidden, hidden))
    check_shape("lstm_sequence_backward", "grad", grad, out.shape)
    check_shape("lstm_sequence_backward", "c0", c0, (batch, hidden))
    d_gates, dh0, dc0 = _backward_result("lstm", res, steps, batch, hidden)
    check_disjoint("lstm_sequence_backward", {"res": res}, {"grad": grad, "out": out, "c0": c0, "w_hh": w_hh})
    dh0[...] = 0.0
    dc0[...] = 0.0
    _run(_LSTM_BACKWARD, steps, batch, 4 * hidden * hidden, grad, out, c0, w_hh, d_gates, dh0, dc0)
    return res


def gru_sequence_forward(projected: np.ndarray, h0: np.ndarray, w_hh: np.ndarray, b_hh: np.ndarray, out: np.ndarray) -> np.ndarray:
    """GRU over a sequence: ``out`` (L, N, 5H) <- [h, r, z, n, hn] per step.

    Shapes: projected (L, N, 3H) = x W_ih^T + b_ih, h0 (N, H), w_hh (3H, H), b_hh (3H,) (zeros
    for a layer without bias).

    >>> out = gru_sequence_forward(np.zeros((1, 1, 3)), np.ones((1, 1)), np.zeros((3, 1)), np.zeros(3), np.empty((1, 1, 5)))
    >>> float(out[0, 0, 0])   # z = 0.5, n = 0: h_1 = 0.5 * h_0
    0.5
    """
    check_float_arrays("gru_sequence_forward", projected=projected, h0=h0, w_hh=w_hh, b_hh=b_hh, out=out)
    steps, batch, hidden = _check_sequence("gru_sequence_forward", 3, projected, w_hh)
    check_shape("gru_sequence_forward", "h0", h0, (batch, hidden))
    check_shape("gru_sequence_forward", "b_hh", b_hh, (3 * hidden,))
    check_shape("gru_sequence_forward", "out", out, (steps, batch, 5 * hidden))
    check_disjoint("gru_sequence_forward", {"out": out}, {"projected": projected, "h0": h0, "w_hh": w_hh, "b_hh": b_hh})
    _run(_GRU_FORWARD, steps, batch, 3 * hidden * hidden, projected, h0, w_hh, b_hh, out)
    return out


def gru_sequence_backward(grad: np.ndarray, out: np.ndarray, h0: np.ndarray, w_hh: np.ndarray, res: np.ndarray) -> np.ndarray:
    """Backward through time of :func:`gru_sequence_forward`: ``res`` (flat) <- [[d r_pre, d z_pre,
    d n_pre] (L, N, 3H) | [d r_pre, d z_pre, d hn] (L, N, 3H) | d h_0 (N, H)] from ``grad`` (L, N, 5H),
    the gradient of ``out``."""
    check_float_arrays("gru_sequence_backward", grad=grad, out=out, h0=h0, w_hh=w_hh, res=res)
    steps, batch, width = out.shape
    hidden = width // 5
    check_shape("gru_sequence_backward", "w_hh", w_hh, (3 * hidden, hidden))
    check_shape("gru_sequence_backward", "grad", grad, out.shape)
    check_shape("gru_sequence_backward", "h0", h0, (batch, hidden))
    d_pre, d_hidden, dh0 = _backward_result("gru", res, steps, batch, hidden)
    check_disjoint("gru_sequence_backward", {"res": res}, {"grad": grad, "out": out, "h0": h0, "w_hh": w_hh})
    dh0[...] = 0.0
    _run(_GRU_BACKWARD, steps, batch, 3 * hidden * hidden, grad, out, h0, w_hh, d_pre, d_hidden, dh0)
    return res


def rnn_sequence_forward(projected: np.ndarray, h0: np.ndarray, w_hh: np.ndarray, out: np.ndarray, relu: bool) -> np.ndarray:
    """Elman RNN over a sequence: ``out`` (L, N, H) <- h_t = act(projected_t + h_{t-1} W_hh^T).

    >>> rnn_sequence_forward(np.ones((1, 1, 1)), np.zeros((1, 1)), np.zeros((1, 1)), np.empty((1, 1, 1)), True)[0, 0, 0]
    np.float64(1.0)
    """
    check_float_arrays("rnn_sequence_forward", projected=projected, h0=h0, w_hh=w_hh, out=out)
    steps, batch, hidden = _check_sequence("rnn_sequence_forward", 1, projected, w_hh)
    check_shape("rnn_sequence_forward", "h0", h0, (batch, hidden))
    check_shape("rnn_sequence_forward", "out", out, projected.shape)
    check_disjoint("rnn_sequence_forward", {"out": out}, {"projected": projected, "h0": h0, "w_hh": w_hh})
    _run(_RNN_FORWARD, steps, batch, hidden * hidden, projected, h0, w_hh, bool(relu), out)
    return out


def rnn_sequence_backward(grad: np.ndarray, out: np.ndarray, w_hh: np.ndarray, res: np.ndarray, relu: bool) -> np.ndarray:
    """Backward through time of :func:`rnn_sequence_forward`: ``res`` (flat) <- [d pre (L, N, H) | d h_0 (N, H)]."""
    check_float_arrays("rnn_sequence_backward", grad=grad, out=out, w_hh=w_hh, res=res)
    steps, batch, hidden = out.shape
    check_shape("rnn_sequence_backward", "w_hh", w_hh, (hidden, hidden))
    check_shape("rnn_sequence_backward", "grad", grad, out.shape)
    d_pre, dh0 = _backward_result("rnn", res, steps, batch, hidden)
    check_disjoint("rnn_sequence_backward", {"res": res}, {"grad": grad, "out": out, "w_hh": w_hh})
    dh0[...] = 0.0
    _run(_RNN_BACKWARD, steps, batch, hidden * hidden, grad, out, w_hh, bool(relu), d_pre, dh0)
    return res
