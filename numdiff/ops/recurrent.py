"""Recurrent layers as sequence ops: ``lstm_sequence``, ``gru_sequence`` and ``rnn_sequence``.

Each runs a whole sequence of one layer and direction in one kernel call
(numdiff.kernels.recurrent, numdiff.cuda.kernels.recurrent), so a tape or a compiled graph holds
one node per layer whatever the sequence length. The caller computes the input half of every
gate first, ``projected = x W_ih^T + b_ih`` (plus ``b_hh`` for LSTM and RNN, where it adds
straight to the gates), as one GEMM over all time steps.

Forward returns what a layer hands on: h_1 .. h_L (L, N, H), and for LSTM c_L after them (L + 1,
N, H). The LSTM and GRU kernels also record every step's activated gates (layouts in
numdiff.kernels.recurrent), which stay on ctx for the backward: no gradient of them is ever
formed. Backward is a second registered
op per family, ``*_sequence_backward``, whose kernel walks the steps in reverse and returns, in
one flat array of contiguous blocks (numdiff.kernels._recurrent_layout), the gradients of the
pre-activation gates and of the initial state; the weight gradients are then one GEMM over the
whole sequence, reading the gate gradients in place. The backward ops are differentiated by recomputing
the same recurrence from numdiff ops (numdiff.ops._recurrent_recompute), so second derivatives are exact. A first-order
backward (grad mode off, host arrays) runs the same kernel and GEMM on arrays without dispatching
the backward op, its views and the matmul: nine ops fewer per call, which a hand-written loop of
cells pays every step (LSTMCell, 30 steps, batch 16, 32 -> 64, forward and backward: 10.1 -> 8.1 ms,
PyTorch 4.7).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.amp import casts_on
from numdiff.autograd.function import Function
from numdiff.backend import backend_for, is_host
from numdiff.kernels._recurrent_layout import backward_blocks, backward_size, split
from numdiff.ops._linalg_grads import direct
from numdiff.ops._recurrent_recompute import (
    backward_of_backward,
    flat,
    gru_recurrence,
    lstm_recurrence,
    rnn_recurrence,
)
from numdiff.ops.joining import cat
from numdiff.ops.linalg import _product
from numdiff.ops.registry import register
from numdiff.tensor import Tensor

__all__ = ["gru_sequence", "lstm_sequence", "rnn_sequence"]


def _c(x: Any) -> Any:
    return np.ascontiguousarray(x, like=x)


def _weight_grad(d_hidden: Tensor, h0: Tensor, states: Tensor) -> Tensor:
    """sum over steps and batch of d_hidden_t^T h_{t-1}: one GEMM over the whole sequence, h_0 then
    h_1 .. h_{L-1} (the first L - 1 rows of `states`) as the previous states.

    d_hidden is a contiguous block of the backward's result: the GEMM reads its transpose in place,
    where a column block (rows 6H apart) was first copied into a transposed layout (2 ms of the
    char LSTM's 36 ms step, and as much again in the input projection's weight gradient). A sequence
    of one step (a cell's step) is the same GEMM on h_0 alone, without the cat of the previous
    states and the reshapes: four recorded ops fewer per step in a hand-written loop of cells."""
    steps = d_hidden.shape[0]
    if steps == 1:
        return d_hidden[0].t() @ h0
    previous = cat([h0.unsqueeze(0), states[: steps - 1]], 0)
    return d_hidden.reshape(-1, d_hidden.shape[-1]).t() @ previous.reshape(-1, previous.shape[-1])


def _weight_grad_array(d_hidden: Any, h0: Any, states: Any) -> Any:
    """`_weight_grad` on arrays, for a first-order backward (`_direct_grads`): the same GEMM on the
    same operands (so the same numbers), without the recorded ops around it."""
    steps, width = d_hidden.shape[0], d_hidden.shape[-1]
    out = np.empty((width, h0.shape[-1]), dtype=d_hidden.dtype)
    if steps == 1:
        _product(d_hidden[0].T, h0, out)
    else:
        previous = np.concatenate([h0[None], states[: steps - 1]], 0)
        _product(d_hidden.reshape(-1, width).T, previous.reshape(-1, previous.shape[-1]), out)
    return out


def _direct_grads(*arrays: Any) -> tuple:
    """A first-order backward's gradients as tensors without history (None stays None)."""
    return tuple(None if a is None else Tensor._wrap(a, None, None) for a in arrays)


def _backward_result(op: str, projected: Any, hidden: int) -> Any:
    """An empty flat result for `op`'s backward kernel (numdiff.kernels._recurrent_layout)."""
    steps, batch = projected.shape[:2]
    return np.empty(backward_size(op, steps, batch, hidden), dtype=projected.dtype, like=projected)


def _blocks(op: str, res: Tensor, projected: Tensor, hidden: int) -> list[Tensor]:
    """The blocks of a backward op's result, as views."""
    return split(res, backward_blocks(op, projected.shape[0], projected.shape[1], hidden))


# --------------------------------------------------------------------------- LSTM
@register("lstm_sequence", compile="kernel", launchers=("lstm_sequence_forward",))
class LSTMSequence(Function):
    """projected (L, N, 4H), h0 (N, H), c0 (N, H), w_hh (4H, H) -> (L + 1, N, H): h_1 .. h_L, then c_L,
    written by the kernel's steps.

    The kernel's record of every step, (L, N, 5H) [c, i, f, g, o], stays on ctx for the backward
    (as the output, the slices h and c_L took of it got a zero-filled gradient of its size)."""

    @staticmethod
    def forward(ctx, projected, h0, c0, w_hh):
        steps, batch, gates = projected.shape
        hidden = gates // 4
        record = np.empty((steps, batch, 5 * hidden), dtype=projected.dtype, like=projected)
        out = np.empty((steps + 1, batch, hidden), dtype=projected.dtype, like=projected)
        backend_for(projected).lstm_sequence_forward(_c(projected), _c(h0), _c(c0), _c(w_hh), record, out)
        ctx.save_for_backward(out, record, projected, h0, c0, w_hh)
        return out

    @staticmethod
    def backward(ctx, grad):
        out, record, projected, h0, c0, w_hh = ctx.saved_tensors
        hidden = h0.shape[-1]
        if direct(grad, out.shape):
            # First order: the backward kernel and the weight GEMM on arrays, no op recorded or
            # dispatched between them (a cell's step in a hand-written loop runs this once a step).
            res = _lstm_backward_kernel(grad._data, record._data, projected._data, c0._data, w_hh._data)
            d_gates, grad_h0, grad_c0 = split(res, backward_blocks("lstm", *projected.shape[:2], hidden))
            grad_w = _weight_grad_array(d_gates, h0._data, out._data) if ctx.needs_input_grad[3] else None
            return _direct_grads(d_gates, grad_h0, grad_c0, grad_w)
        res = LSTMSequenceBackward.apply(grad, record, projected, h0, c0, w_hh)
        d_gates, grad_h0, grad_c0 = _blocks("lstm", res, projected, hidden)
        grad_w = _weight_grad(d_gates, h0, out) if ctx.needs_input_grad[3] else None
        return d_gates, grad_h0, grad_c0, grad_w


@register("lstm_sequence_backward", compile="kernel", launchers=("lstm_sequence_backward",))
class LSTMSequenceBackward(Function):
    """grad (L + 1, N, H), record (L, N, 5H), projected, h0, c0, w_hh -> flat [d gates (L, N, 4H) | d h_0 | d c_0]."""

    @staticmethod
    def forward(ctx, grad, record, projected, h0, c0, w_hh):
        ctx.save_for_backward(grad, record, projected, h0, c0, w_hh)
        return _lstm_backward_kernel(grad, record, projected, c0, w_hh)

    @staticmethod
    def backward(ctx, grad_res):
        return backward_of_backward(lstm_recurrence, ctx, grad_res, 2, lambda dp, dh, dc: flat(dp, dh[0], dc[0]))


def _lstm_backward_kernel(grad: Any, record: Any, projected: Any, c0: Any, w_hh: Any) -> Any:
    res = _backward_result("lstm", projected, c0.shape[-1])
    backend_for(record).lstm_sequence_backward(_c(grad), _c(record), _c(c0), _c(w_hh), res)
    return res


def lstm_sequence(projected: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor) -> Tensor:
    """One LSTM layer over a sequence: (L + 1, N, H) holding h_1 .. h_L, then c_L.

    >>> out = lstm_sequence(numdiff.zeros(5, 2, 12), numdiff.zeros(2, 3), numdiff.zeros(2, 3), numdiff.zeros(12, 3))
    >>> tuple(out[:-1].shape), tuple(out[-1].shape)   # h_1 .. h_5, c_5
    ((5, 2, 3), (2, 3))
    """
    _check("lstm_sequence", 4, projected, w_hh, h0=h0, c0=c0)
    return LSTMSequence.apply(projected, h0, c0, w_hh)


# --------------------------------------------------------------------------- GRU
@register("gru_sequence", compile="kernel", launchers=("gru_sequence_forward",))
class GRUSequence(Function):
    """projected (L, N, 3H), h0 (N, H), w_hh (3H, H), b_hh (3H,) or None -> (L, N, H): h_1 .. h_L.

    The kernel's record of every step, (L, N, 5H) [h, r, z, n, hn], stays on ctx for the backward
    (as the output, the slice h took of it got a zero-filled (L, N, 5H) gradient)."""

    @staticmethod
    def forward(ctx, projected, h0, w_hh, b_hh):
        steps, batch, gates = projected.shape
        hidden = gates // 3
        record = np.empty((steps, batch, 5 * hidden), dtype=projected.dtype, like=projected)
        bias = np.zeros(gates, dtype=projected.dtype, like=projected) if b_hh is None else _c(b_hh)
        backend_for(projected).gru_sequence_forward(_c(projected), _c(h0), _c(w_hh), bias, record)
        out = _c(record[..., :hidden])
        ctx.save_for_backward(out, record, projected, h0, w_hh, b_hh)
        return out

    @staticmethod
    def backward(ctx, grad):
        out, record, projected, h0, w_hh, b_hh = ctx.saved_tensors
        hidden = h0.shape[-1]
        needs = ctx.needs_input_grad
        if direct(grad, out.shape):  # first order: arrays only (see LSTMSequence.backward)
            res = _gru_backward_kernel(grad._data, record._data, projected._data, h0._data, w_hh._data)
            d_pre, d_hidden, grad_h0 = split(res, backward_blocks("gru", *projected.shape[:2], hidden))
            grad_w = _weight_grad_array(d_hidden, h0._data, out._data) if needs[2] else None
            grads = _direct_grads(d_pre, grad_h0, grad_w)
            d_hidden = Tensor._wrap(d_hidden, None, None)
            return (*grads, d_hidden.sum((0, 1)) if len(needs) > 3 and needs[3] else None)
        res = GRUSequenceBackward.apply(grad, record, projected, h0, w_hh, b_hh)
        d_pre, d_hidden, grad_h0 = _blocks("gru", res, projected, hidden)
        grad_w = _weight_grad(d_hidden, h0, out) if needs[2] else None
        grad_b = d_hidden.sum((0, 1)) if len(needs) > 3 and needs[3] else None
        return d_pre, grad_h0, grad_w, grad_b


@register("gru_sequence_backward", compile="kernel", launchers=("gru_sequence_backward",))
class GRUSequenceBackward(Function):
    """grad (L, N, H), record (L, N, 5H), projected, h0, w_hh, b_hh -> flat [d pre (L, N, 3H) | d hidden (L, N, 3H) | d h_0]."""

    @staticmethod
    def forward(ctx, grad, record, projected, h0, w_hh, b_hh):
        ctx.save_for_backward(grad, record, projected, h0, w_hh, b_hh)
        return _gru_backward_kernel(grad, record, projected, h0, w_hh)

    @staticmethod
    def backward(ctx, grad_res):
        def split_streams(dp: Tensor, dh: Tensor, dhn: Tensor) -> Tensor:
            hidden = dh.shape[-1]
            return flat(dp, cat([dp[..., : 2 * hidden], dhn], -1), dh[0])

        return backward_of_backward(gru_recurrence, ctx, grad_res, 2, split_streams)


def _gru_backward_kernel(grad: Any, record: Any, projected: Any, h0: Any, w_hh: Any) -> Any:
    res = _backward_result("gru", projected, h0.shape[-1])
    backend_for(record).gru_sequence_backward(_c(grad), _c(record), _c(h0), _c(w_hh), res)
    return res


def gru_sequence(projected: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Tensor | None = None) -> Tensor:
    """One GRU layer over a sequence: (L, N, H) holding h_1 .. h_L.

    >>> tuple(gru_sequence(numdiff.zeros(5, 2, 9), numdiff.zeros(2, 3), numdiff.zeros(9, 3)).shape)
    (5, 2, 3)
    """
    hidden = _check("gru_sequence", 3, projected, w_hh, h0=h0)
    if b_hh is not None and tuple(b_hh.shape) != (3 * hidden,):
        raise ValueError(f"gru_sequence: b_hh must have shape ({3 * hidden},), got {tuple(b_hh.shape)}")
    return GRUSequence.apply(projected, h0, w_hh, b_hh)


# --------------------------------------------------------------------------- RNN
@register("rnn_sequence", compile="kernel", launchers=("rnn_sequence_forward",))
class RNNSequence(Function):
    """projected (L, N, H), h0 (N, H), w_hh (H, H) -> (L, N, H): h_t = act(projected_t + h_{t-1} W_hh^T)."""

    @staticmethod
    def forward(ctx, projected, h0, w_hh, *, relu):
        ctx.relu = relu
        out = np.empty(projected.shape, dtype=projected.dtype, like=projected)
        backend_for(projected).rnn_sequence_forward(_c(projected), _c(h0), _c(w_hh), out, relu)
        ctx.save_for_backward(out, projected, h0, w_hh)
        return out

    @staticmethod
    def backward(ctx, grad):
        out, projected, h0, w_hh = ctx.saved_tensors
        hidden = h0.shape[-1]
        if direct(grad, out.shape):  # first order: arrays only (see LSTMSequence.backward)
            res = _rnn_backward_kernel(grad._data, out._data, projected._data, w_hh._data, ctx.relu)
            d_pre, grad_h0 = split(res, backward_blocks("rnn", *projected.shape[:2], hidden))
            grad_w = _weight_grad_array(d_pre, h0._data, out._data) if ctx.needs_input_grad[2] else None
            return _direct_grads(d_pre, grad_h0, grad_w)
        res = RNNSequenceBackward.apply(grad, out, projected, h0, w_hh, relu=ctx.relu)
        d_pre, grad_h0 = _blocks("rnn", res, projected, hidden)
        grad_w = _weight_grad(d_pre, h0, out) if ctx.needs_input_grad[2] else None
        return d_pre, grad_h0, grad_w


@register("rnn_sequence_backward", compile="kernel", launchers=("rnn_sequence_backward",))
class RNNSequenceBackward(Function):
    """grad, out (L, N, H), projected, h0, w_hh -> flat [d pre (L, N, H) | d h_0]."""

    @staticmethod
    def forward(ctx, grad, out, projected, h0, w_hh, *, relu):
        ctx.relu = relu
        ctx.save_for_backward(grad, out, projected, h0, w_hh)
        return _rnn_backward_kernel(grad, out, projected, w_hh, relu)

    @staticmethod
    def backward(ctx, grad_res):
        def recurrence(projected, h0, w_hh, dh):
            return rnn_recurrence(projected, h0, w_hh, dh, relu=ctx.relu)

        return backward_of_backward(recurrence, ctx, grad_res, 1, lambda dp, dh: flat(dp, dh[0]))


def _rnn_backward_kernel(grad: Any, out: Any, projected: Any, w_hh: Any, relu: bool) -> Any:
    res = _backward_result("rnn", projected, w_hh.shape[-1])
    backend_for(out).rnn_sequence_backward(_c(grad), _c(out), _c(w_hh), res, relu)
    return res


def rnn_sequence(projected: Tensor, h0: Tensor, w_hh: Tensor, relu: bool = False) -> Tensor:
    """One Elman RNN layer over a sequence: (L, N, H), h_t = tanh or relu(projected_t + h_{t-1} W_hh^T).

    >>> tuple(rnn_sequence(numdiff.zeros(5, 2, 3), numdiff.zeros(2, 3), numdiff.zeros(3, 3)).shape)
    (5, 2, 3)
    """
    _check("rnn_sequence", 1, projected, w_hh, h0=h0)
    return RNNSequence.apply(projected, h0, w_hh, relu=bool(relu))


# --------------------------------------------------------------------------- checks
_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _check(op: str, gates: int, projected: Any, w_hh: Any, **states: Any) -> int:
    """Validate shapes, dtypes and devices before any kernel runs; returns the hidden size."""
    tensors = {"projected": projected, "w_hh": w_hh, **states}
    for name, value in tensors.items():
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(value).__name__}")
    if projected.ndim != 3 or projected.shape[-1] % gates:
        raise ValueError(f"{op}: projected must be (L, N, {gates}*H), got shape {tuple(projected.shape)}")
    steps, batch, width = projected.shape
    hidden = width // gates
    if steps == 0:
        raise ValueError(f"{op}: expected a sequence of length >= 1, got projected of shape {tuple(projected.shape)}")
    if tuple(w_hh.shape) != (width, hidden):
        raise ValueError(f"{op}: w_hh must have shape ({width}, {hidden}) for projected {tuple(projected.shape)}, got {tuple(w_hh.shape)}")
    for name, state in states.items():
        if tuple(state.shape) != (batch, hidden):
            raise ValueError(f"{op}: {name} must have shape ({batch}, {hidden}), got {tuple(state.shape)}")
    # The common case first, on the arrays: one kernel dtype, every tensor on the host (a cell's
    # step checks once a step, and naming every dtype and device cost ~3 us of a ~70 us step).
    arrays = [value._data for value in tensors.values()]
    first = arrays[0].dtype
    if first in _KERNEL_DTYPES and all(a.dtype == first and is_host(a) for a in arrays):
        return hidden
    dtypes = {name: str(value.dtype) for name, value in tensors.items()}
    # Under autocast the sequence ops run in float32 (amp.FLOAT32): the cast comes after this check.
    floats = ("numdiff.float32", "numdiff.float64", "numdiff.bfloat16", "numdiff.float16")
    if casts_on(projected) and all(d in floats for d in dtypes.values()):
        pass
    elif len(set(dtypes.values())) != 1 or dtypes["projected"] not in ("numdiff.float32", "numdiff.float64"):
        raise TypeError(f"{op}: expected float32 or float64 tensors of one dtype, got {dtypes}")
    devices = {name: str(value.device) for name, value in tensors.items()}
    if len(set(devices.values())) != 1:
        raise ValueError(f"{op}: tensors on different devices: {devices}")
    return hidden
