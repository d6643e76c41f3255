"""Recurrent-layer kernels (CPU, Numba): RNN, LSTM and GRU over a whole sequence, and their
backward through time.

Each forward takes the input half of every gate already computed (``projected``, shape (L, N, G):
one GEMM batched over time, done by the caller) and runs the time loop here: per step one
product ``h_{t-1} @ W_hh^T`` added straight into the step's gate block
(numdiff.kernels._row_products.add_step_product: over a sequence, ``h_{t-1} @ (W_hh^T)`` through
numdiff.kernels._blas.gemm, W_hh^T copied once per sequence; for a few rows, a cell's step,
register-blocked dot products on W_hh as it lies) and one fused loop over the gates. Backward walks
the steps in reverse with one gemm per step, ``d h_{t-1} = d gates_t @ W_hh``, on W_hh as it lies.
No Python runs per step. The gemm calls run on the calling thread (a part of the batch each, when
the kernel splits it between threads); :func:`_run` builds gemm for the dtype first.

Layouts (H hidden size; every array C-contiguous, one float dtype):

* LSTM, gates i, f, g, o. ``record`` (L, N, 5H) = [c_t, i, f, g, o] with the gates activated, and
  ``hs`` (L + 1, N, H) = h_1 .. h_L, then c_L: the op's output, written by the steps themselves (a
  record holding h as well, copied out afterwards, cost a strided copy of (L, N, H) per call: 120 us of
  the char LSTM's forward, and 1/6 more memory). Backward reads ``grad`` (L + 1, N, H), the gradients
  of h_1 .. h_L and of c_L (the op's output; no gradient reaches the record, which only the backward
  reads), and writes ``res``, flat: [d(pre-activation gates) (L, N, 4H) | d h_0 (N, H) | d c_0 (N, H)].
* GRU, gates r, z, n. ``out`` (L, N, 5H) = [h_t, r, z, n, hn] with ``hn = h_{t-1} W_hn^T + b_hn``.
  Backward reads ``grad`` (L, N, H), the gradient of h_1 .. h_L (the op's output), and writes ``res``, flat: [[d r_pre, d z_pre, d n_pre] (L, N, 3H) | [d r_pre, d z_pre, d hn]
  (L, N, 3H) | d h_0 (N, H)]: the gradient of projected, the operand of W_hh's and b_hh's gradients.
* RNN (tanh or relu). ``out`` (L, N, H) = h_t. Backward writes ``res``, flat: [d pre (L, N, H) | d h_0 (N, H)].

Each block of a backward's ``res`` is C-contiguous, so the caller takes them as views: the weight
gradients' GEMMs read the gate gradients in place (a block strided inside an (L, N, 6H) result
was copied first, 0.4 ms of the char LSTM's step), and no step's d h_{t-1} is stored, only h_0's.

The LSTM and GRU backward kernels read the gradients of h (and LSTM's c_L) only, the op's output:
the other blocks of ``out`` are a record for the backward, never an output, so they carry no
gradient. The weight gradients are one GEMM each over the whole sequence, left to the caller.

The loop nests are in numdiff.kernels._recurrent_loops (LSTM) and _gru_rnn_loops; the functions here check their arguments
and split the batch between threads.
"""

from __future__ import annotations

import numpy as np

from numdiff.kernels import _gru_rnn_loops as gru_rnn_loops
from numdiff.kernels import _recurrent_loops as loops
from numdiff.kernels._blas import prepare_blas
from numdiff.kernels._checks import check_disjoint, check_float_arrays, check_shape
from numdiff.kernels._parallel import KernelPair
from numdiff.kernels._recurrent_layout import backward_blocks, backward_size, split

__all__ = [
    "gru_sequence_backward",
    "gru_sequence_forward",
    "lstm_sequence_backward",
    "lstm_sequence_forward",
    "rnn_sequence_backward",
    "rnn_sequence_forward",
    "sequence_forward_checked",
]

RECURRENT_GRAIN = 1 << 22
"""Multiply-adds of a whole sequence's recurrent products (steps x batch x gates x hidden) from
which its kernel splits the batch between threads: one parallel region per sequence, not per
step, so a few microseconds against the ~100 us of work at the grain."""


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
    the rows of a recurrence never meet, so the parts need no barrier between steps). The steps'
    products are numdiff.kernels._blas.gemm calls, built here for the arrays' dtype."""
    prepare_blas(arrays[0].dtype)
    kernel, parts = pair.pick(steps * batch * per_row_step, RECURRENT_GRAIN)
    bounds = batch_bounds(batch, parts)
    (pair.serial if bounds.shape[0] == 2 else kernel)(*arrays, bounds)


_STEP_FORWARDS = {"lstm": (loops.LSTM_FORWARD, 4), "gru": (gru_rnn_loops.GRU_FORWARD, 3), "rnn": (gru_rnn_loops.RNN_FORWARD, 1)}


def sequence_forward_checked(family: str, projected: np.ndarray, *arrays) -> None:
    """`family`'s forward kernel ("lstm", "gru" or "rnn") on host arguments its caller has checked
    as the public forward checks them: every array C-contiguous and of one float dtype, in the
    shapes the layouts above give, and the arrays written (LSTM's record and hs, GRU's and RNN's
    out: the last ones; RNN's `relu` comes before its out, as the kernel takes it) just allocated.
    A cell's step (numdiff.ops.recurrent_cell) checks its operands once and allocates ``projected``
    and the written arrays itself, so the public checks are repeated work: 6 of an LSTMCell step's
    23.5 us in the kernel call (16 x 32 -> 64, float32, one thread)."""
    pair, gates = _STEP_FORWARDS[family]
    steps, batch, width = projected.shape
    _run(pair, steps, batch, width * (width // gates), projected, *arrays)


def _check_sequence(op: str, gates: int, projected: np.ndarray, w_hh: np.ndarray) -> tuple[int, int, int]:
    if projected.ndim != 3:
        raise ValueError(f"{op}: projected must be 3-D (L, N, {gates}*H), got shape {projected.shape}")
    steps, batch, width = projected.shape
    if width % gates or w_hh.shape != (width, width // gates):
        raise ValueError(
            f"{op}: projected (L, N, {gates}*H) and w_hh ({gates}*H, H) disagree: {projected.shape} and {w_hh.shape}"
        )
    return steps, batch, width // gates


def lstm_sequence_forward(
    projected: np.ndarray, h0: np.ndarray, c0: np.ndarray, w_hh: np.ndarray, record: np.ndarray, hs: np.ndarray
) -> np.ndarray:
    """LSTM over a sequence: ``record`` (L, N, 5H) <- [c, i, f, g, o] per step and ``hs`` (L + 1, N, H)
    <- h_1 .. h_L, then c_L. Returns hs.

    Shapes: projected (L, N, 4H) = x W_ih^T + b_ih + b_hh, h0 and c0 (N, H), w_hh (4H, H).

    >>> record, hs = np.empty((2, 1, 5)), np.empty((3, 1, 1))
    >>> hs = lstm_sequence_forward(np.zeros((2, 1, 4)), np.zeros((1, 1)), np.ones((1, 1)), np.zeros((4, 1)), record, hs)
    >>> round(float(hs[2, 0, 0]), 3)   # c_2 = f * (f * c_0 + i * g) + i * g = 0.25
    0.25
    """
    check_float_arrays("lstm_sequence_forward", projected=projected, h0=h0, c0=c0, w_hh=w_hh, record=record, hs=hs)
    steps, batch, hidden = _check_sequence("lstm_sequence_forward", 4, projected, w_hh)
    for name, state in (("h0", h0), ("c0", c0)):
        check_shape("lstm_sequence_forward", name, state, (batch, hidden))
    check_shape("lstm_sequence_forward", "record", record, (steps, batch, 5 * hidden))
    check_shape("lstm_sequence_forward", "hs", hs, (steps + 1, batch, hidden))
    check_disjoint("lstm_sequence_forward", {"record": record, "hs": hs}, {"projected": projected, "h0": h0, "c0": c0, "w_hh": w_hh})
    _run(loops.LSTM_FORWARD, steps, batch, 4 * hidden * hidden, projected, h0, c0, w_hh, record, hs)
    return hs


def _backward_result(op: str, res: np.ndarray, steps: int, batch: int, hidden: int) -> list[np.ndarray]:
    """The blocks of a backward's flat ``res`` (numdiff.kernels._recurrent_layout), checked."""
    check_shape(f"{op}_sequence_backward", "res", res, (backward_size(op, steps, batch, hidden),))
    return split(res, backward_blocks(op, steps, batch, hidden))


def lstm_sequence_backward(grad: np.ndarray, record: np.ndarray, c0: np.ndarray, w_hh: np.ndarray, res: np.ndarray) -> np.ndarray:
    """Backward through time of :func:`lstm_sequence_forward`: ``res`` (flat) <- [d gates before
    activation (L, N, 4H) | d h_0 (N, H) | d c_0 (N, H)] from ``grad`` (L + 1, N, H): the gradients
    of h_1 .. h_L and, in its last row, of c_L (numdiff.ops.recurrent.lstm_sequence's output)."""
    check_float_arrays("lstm_sequence_backward", grad=grad, record=record, c0=c0, w_hh=w_hh, res=res)
    steps, batch, width = record.shape
    hidden = width // 5
    check_shape("lstm_sequence_backward", "record", record, (steps, batch, 5 * hidden))
    check_shape("lstm_sequence_backward", "w_hh", w_hh, (4 * hidden, hidden))
    check_shape("lstm_sequence_backward", "grad", grad, (steps + 1, batch, hidden))
    check_shape("lstm_sequence_backward", "c0", c0, (batch, hidden))
    d_gates, dh0, dc0 = _backward_result("lstm", res, steps, batch, hidden)
    check_disjoint("lstm_sequence_backward", {"res": res}, {"grad": grad, "record": record, "c0": c0, "w_hh": w_hh})
    dh0[...] = 0.0
    dc0[...] = grad[steps]  # d c_L: the running d c_t starts from it
    _run(loops.LSTM_BACKWARD, steps, batch, 4 * hidden * hidden, grad, record, c0, w_hh, d_gates, dh0, dc0)
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
    _run(gru_rnn_loops.GRU_FORWARD, steps, batch, 3 * hidden * hidden, projected, h0, w_hh, b_hh, out)
    return out


def gru_sequence_backward(grad: np.ndarray, out: np.ndarray, h0: np.ndarray, w_hh: np.ndarray, res: np.ndarray) -> np.ndarray:
    """Backward through time of :func:`gru_sequence_forward`: ``res`` (flat) <- [[d r_pre, d z_pre,
    d n_pre] (L, N, 3H) | [d r_pre, d z_pre, d hn] (L, N, 3H) | d h_0 (N, H)] from ``grad`` (L, N, H),
    the gradient of h_1 .. h_L (numdiff.ops.recurrent.gru_sequence's output)."""
    check_float_arrays("gru_sequence_backward", grad=grad, out=out, h0=h0, w_hh=w_hh, res=res)
    steps, batch, width = out.shape
    hidden = width // 5
    check_shape("gru_sequence_backward", "w_hh", w_hh, (3 * hidden, hidden))
    check_shape("gru_sequence_backward", "grad", grad, (steps, batch, hidden))
    check_shape("gru_sequence_backward", "h0", h0, (batch, hidden))
    d_pre, d_hidden, dh0 = _backward_result("gru", res, steps, batch, hidden)
    check_disjoint("gru_sequence_backward", {"res": res}, {"grad": grad, "out": out, "h0": h0, "w_hh": w_hh})
    dh0[...] = 0.0
    _run(gru_rnn_loops.GRU_BACKWARD, steps, batch, 3 * hidden * hidden, grad, out, h0, w_hh, d_pre, d_hidden, dh0)
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
    _run(gru_rnn_loops.RNN_FORWARD, steps, batch, hidden * hidden, projected, h0, w_hh, bool(relu), out)
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
    _run(gru_rnn_loops.RNN_BACKWARD, steps, batch, hidden * hidden, grad, out, w_hh, bool(relu), d_pre, dh0)
    return res
