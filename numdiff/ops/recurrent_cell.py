"""One time step of a recurrent cell as one op: ``lstm_cell_step``, ``gru_cell_step`` and ``rnn_cell_step``.

A hand-written time loop over nn.LSTMCell, GRUCell or RNNCell runs one of these per step. Each takes
the step's input and state with the cell's four parameters, and runs the input projection
(``x W_ih^T + b_ih``, plus ``b_hh`` for LSTM and RNN, where it adds straight to the gates) as one
GEMM, then its family's sequence kernel over one step (numdiff.kernels.recurrent). The cells ran
the same kernel as the sequence op of one step, but recorded the input Linear, ``b_ih + b_hh``, the
unsqueeze to a sequence and (GRU, RNN) the ``[0]`` of the result around it: four ops forward and
backward per step that this op does inside its one node.

Backward runs the sequence op's backward kernel, then the products of the input and weight
gradients. A first-order backward on host arrays does it on arrays (as LSTMSequence's does); with
grad mode on (create_graph) or on a device it calls the sequence backward op (whose own backward
recomputes the recurrence from ops, numdiff.ops._recurrent_recompute) on a projection rebuilt from
ops, so second derivatives reach x, W_ih and the biases through it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._lazy import lazy_module
from numdiff.autograd.function import Function
from numdiff.backend import backend_for, is_host
from numdiff.kernels._recurrent_layout import backward_blocks, split
from numdiff.ops._linalg_grads import direct
from numdiff.ops.linalg import _fresh_product, linear
from numdiff.ops.recurrent import (
    GRUSequenceBackward,
    LSTMSequenceBackward,
    RNNSequenceBackward,
    _c,
    _direct_grads,
    _gru_backward_kernel,
    _lstm_backward_kernel,
    _rnn_backward_kernel,
)
from numdiff.ops.registry import register
from numdiff.tensor import Tensor

__all__ = ["gru_cell_step", "lstm_cell_step", "rnn_cell_step"]

# With Numba, loaded by the first step.
_recurrent_kernels = lazy_module("numdiff.kernels.recurrent")
_matmul_kernels = lazy_module("numdiff.kernels.matmul")


def _projection(x: Any, w_ih: Any, *biases: Any) -> Any:
    """x W_ih^T plus every bias given, as a one-step sequence (1, N, G) of new memory."""
    out = np.empty((1, x.shape[0], w_ih.shape[0]), dtype=x.dtype, like=x)
    if is_host(x):
        # `_check` found one float dtype and matching shapes, and out is new: what _fresh_product
        # would test before the same call (2 of its 10 us on an LSTMCell's 16 x 32 rows).
        _matmul_kernels.run_product_checked(False, True, _c(x), _c(w_ih), out[0])
    else:
        _fresh_product(_c(x), _c(w_ih).T, out[0])
    for bias in biases:
        if bias is not None:
            np.add(out, bias, out=out)
    return out


def _projection_op(x: Tensor, w_ih: Tensor, b_ih: Tensor | None, b_hh: Tensor | None) -> Tensor:
    """`_projection` from recorded ops (a create_graph or device backward differentiates through it)."""
    projected = linear(x, w_ih, b_ih)
    return (projected if b_hh is None else projected + b_hh).unsqueeze(0)


def _array_product(a: Any, b: Any) -> Any:
    out = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
    _fresh_product(a, b, out)
    return out


def _input_side(needs: tuple, d_input: Any, d_hidden: Any, x: Any, h: Any, w_ih: Any, product: Any) -> tuple:
    """Gradients of x, W_ih, W_hh, b_ih and b_hh (the first input and the last four) from the
    gates' gradients: d_input (N, G) of the projection, d_hidden of the product with h (the same
    array for LSTM and RNN). Arrays or tensors alike; `product` multiplies two of them."""
    return (
        product(d_input, w_ih) if needs[0] else None,
        product(d_input.mT, x) if needs[-4] else None,
        product(d_hidden.mT, h) if needs[-3] else None,
        d_input.sum(0) if needs[-2] else None,
        d_hidden.sum(0) if needs[-1] else None,
    )


def _first_order(needs: tuple, d_input: Any, d_hidden: Any, states: tuple, x: Tensor, h: Tensor, w_ih: Tensor) -> tuple:
    """A first-order backward's gradients on host arrays, as tensors without history."""
    grad_x, *params = _input_side(needs, d_input, d_hidden, _c(x._data), _c(h._data), _c(w_ih._data), _array_product)
    return _direct_grads(grad_x, *states, *params)


def _recorded(needs: tuple, d_input: Tensor, d_hidden: Tensor, states: tuple, x: Tensor, h: Tensor, w_ih: Tensor) -> tuple:
    grad_x, *params = _input_side(needs, d_input, d_hidden, x, h, w_ih, Tensor.__matmul__)
    return (grad_x, *states, *params)


# --------------------------------------------------------------------------- LSTM
@register("lstm_cell_step", compile="kernel", launchers=("lstm_sequence_forward",))
class LSTMCellStep(Function):
    """x (N, I), h (N, H), c (N, H), w_ih (4H, I), w_hh (4H, H), b_ih and b_hh (4H,) or None ->
    (2, N, H): h', then c' (lstm_sequence's output for one step)."""

    @staticmethod
    def forward(ctx, x, h, c, w_ih, w_hh, b_ih, b_hh):
        projected = _projection(x, w_ih, b_ih, b_hh)
        batch, hidden = h.shape
        record = np.empty((1, batch, 5 * hidden), dtype=x.dtype, like=x)
        out = np.empty((2, batch, hidden), dtype=x.dtype, like=x)
        if is_host(x):  # the public launcher's checks are `_check`'s, done before apply
            _recurrent_kernels.sequence_forward_checked("lstm", projected, _c(h), _c(c), _c(w_hh), record, out)
        else:
            backend_for(x).lstm_sequence_forward(projected, _c(h), _c(c), _c(w_hh), record, out)
        ctx.save_for_backward(record, projected, x, h, c, w_ih, w_hh, b_ih, b_hh)
        return out

    @staticmethod
    def backward(ctx, grad):
        record, projected, x, h, c, w_ih, w_hh, b_ih, b_hh = ctx.saved_tensors
        needs, blocks = ctx.needs_input_grad, backward_blocks("lstm", 1, *h.shape)
        if direct(grad, (2, *h.shape)):
            res = _lstm_backward_kernel(grad._data, record._data, projected._data, c._data, w_hh._data)
            d_gates, grad_h, grad_c = split(res, blocks)
            return _first_order(needs, d_gates[0], d_gates[0], (grad_h, grad_c), x, h, w_ih)
        projected = _projection_op(x, w_ih, b_ih, b_hh)
        res = LSTMSequenceBackward.apply(grad, record, projected, h, c, w_hh)
        d_gates, grad_h, grad_c = split(res, blocks)
        return _recorded(needs, d_gates[0], d_gates[0], (grad_h, grad_c), x, h, w_ih)


def lstm_cell_step(x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One LSTM step (gates i, f, g, o): (2, N, H) holding h', then c'.

    >>> z = numdiff.zeros
    >>> tuple(lstm_cell_step(z(2, 5), z(2, 3), z(2, 3), z(12, 5), z(12, 3)).shape)
    (2, 2, 3)
    """
    _check("lstm_cell_step", 4, x, w_ih, w_hh, b_ih, b_hh, h=h, c=c)
    return LSTMCellStep.apply(x, h, c, w_ih, w_hh, b_ih, b_hh)


# --------------------------------------------------------------------------- GRU
@register("gru_cell_step", compile="kernel", launchers=("gru_sequence_forward",))
class GRUCellStep(Function):
    """x (N, I), h (N, H), w_ih (3H, I), w_hh (3H, H), b_ih and b_hh (3H,) or None -> h' (N, H).
    b_hh stays inside the kernel's product with h: b_hn sits inside r * (...)."""

    @staticmethod
    def forward(ctx, x, h, w_ih, w_hh, b_ih, b_hh):
        projected = _projection(x, w_ih, b_ih)
        batch, hidden = h.shape
        record = np.empty((1, batch, 5 * hidden), dtype=x.dtype, like=x)
        bias = np.zeros(3 * hidden, dtype=x.dtype, like=x) if b_hh is None else _c(b_hh)
        if is_host(x):
            _recurrent_kernels.sequence_forward_checked("gru", projected, _c(h), _c(w_hh), bias, record)
        else:
            backend_for(x).gru_sequence_forward(projected, _c(h), _c(w_hh), bias, record)
        ctx.save_for_backward(record, projected, x, h, w_ih, w_hh, b_ih, b_hh)
        return _c(record[0, :, :hidden])

    @staticmethod
    def backward(ctx, grad):
        record, projected, x, h, w_ih, w_hh, b_ih, b_hh = ctx.saved_tensors
        needs, blocks = ctx.needs_input_grad, backward_blocks("gru", 1, *h.shape)
        if direct(grad, h.shape):
            res = _gru_backward_kernel(grad._data[None], record._data, projected._data, h._data, w_hh._data)
            d_pre, d_hidden, grad_h = split(res, blocks)
            return _first_order(needs, d_pre[0], d_hidden[0], (grad_h,), x, h, w_ih)
        projected = _projection_op(x, w_ih, b_ih, None)
        res = GRUSequenceBackward.apply(grad.unsqueeze(0), record, projected, h, w_hh, b_hh)
        d_pre, d_hidden, grad_h = split(res, blocks)
        return _recorded(needs, d_pre[0], d_hidden[0], (grad_h,), x, h, w_ih)


def gru_cell_step(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One GRU step (gates r, z, n): h' (N, H).

    >>> z = numdiff.zeros
    >>> tuple(gru_cell_step(z(2, 5), z(2, 3), z(9, 5), z(9, 3)).shape)
    (2, 3)
    """
    _check("gru_cell_step", 3, x, w_ih, w_hh, b_ih, b_hh, h=h)
    return GRUCellStep.apply(x, h, w_ih, w_hh, b_ih, b_hh)


# --------------------------------------------------------------------------- RNN
@register("rnn_cell_step", compile="kernel", launchers=("rnn_sequence_forward",))
class RNNCellStep(Function):
    """x (N, I), h (N, H), w_ih (H, I), w_hh (H, H), b_ih and b_hh (H,) or None -> h' (N, H):
    tanh or relu of x W_ih^T + b_ih + h W_hh^T + b_hh."""

    @staticmethod
    def forward(ctx, x, h, w_ih, w_hh, b_ih, b_hh, *, relu):
        ctx.relu = relu
        projected = _projection(x, w_ih, b_ih, b_hh)
        out = np.empty(projected.shape, dtype=x.dtype, like=x)
        if is_host(x):
            _recurrent_kernels.sequence_forward_checked("rnn", projected, _c(h), _c(w_hh), bool(relu), out)
        else:
            backend_for(x).rnn_sequence_forward(projected, _c(h), _c(w_hh), out, relu)
        result = out[0]  # saved as the output itself: bound to the result tensor, not copied
        ctx.save_for_backward(result, projected, x, h, w_ih, w_hh, b_ih, b_hh)
        return result

    @staticmethod
    def backward(ctx, grad):
        out, projected, x, h, w_ih, w_hh, b_ih, b_hh = ctx.saved_tensors
        needs, blocks = ctx.needs_input_grad, backward_blocks("rnn", 1, *h.shape)
        if direct(grad, h.shape):
            res = _rnn_backward_kernel(grad._data[None], out._data[None], projected._data, w_hh._data, ctx.relu)
            d_pre, grad_h = split(res, blocks)
            return _first_order(needs, d_pre[0], d_pre[0], (grad_h,), x, h, w_ih)
        projected = _projection_op(x, w_ih, b_ih, b_hh)
        res = RNNSequenceBackward.apply(grad.unsqueeze(0), out.unsqueeze(0), projected, h, w_hh, relu=ctx.relu)
        d_pre, grad_h = split(res, blocks)
        return _recorded(needs, d_pre[0], d_pre[0], (grad_h,), x, h, w_ih)


def rnn_cell_step(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None, relu: bool = False) -> Tensor:
    """One Elman step: h' (N, H), tanh (or relu) of both products and both biases.

    >>> z = numdiff.zeros
    >>> tuple(rnn_cell_step(z(2, 5), z(2, 3), z(3, 5), z(3, 3)).shape)
    (2, 3)
    """
    _check("rnn_cell_step", 1, x, w_ih, w_hh, b_ih, b_hh, h=h)
    return RNNCellStep.apply(x, h, w_ih, w_hh, b_ih, b_hh, relu=bool(relu))


# --------------------------------------------------------------------------- checks
_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _check(op: str, gates: int, x: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, **states: Any) -> None:
    """Validate types, shapes, dtypes and devices before any kernel runs (a cell's step: the
    common case is decided on the arrays, as numdiff.ops.recurrent's check does)."""
    if _host_step_operands(gates, x, w_ih, w_hh, b_ih, b_hh, states.values()):
        return
    tensors = {"x": x, **states, "w_ih": w_ih, "w_hh": w_hh}
    biases = {"b_ih": b_ih, "b_hh": b_hh}
    for name, value in (*tensors.items(), *biases.items()):
        if not isinstance(value, Tensor) and not (name in biases and value is None):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(value).__name__}")
    tensors.update((name, b) for name, b in biases.items() if b is not None)
    w_shape, x_shape = tuple(w_hh.shape), tuple(x.shape)
    if len(w_shape) != 2 or w_shape[0] != gates * w_shape[1] or w_shape[1] == 0:
        raise ValueError(f"{op}: w_hh must have shape ({gates}*H, H) with H >= 1, got {w_shape}")
    width, hidden = w_shape
    if len(x_shape) != 2:
        raise ValueError(f"{op}: x must be (N, input_size), got shape {x_shape}")
    expected = {"w_ih": (width, x_shape[1]), "b_ih": (width,), "b_hh": (width,), **dict.fromkeys(states, (x_shape[0], hidden))}
    for name, shape in expected.items():
        if name in tensors and tuple(tensors[name].shape) != shape:
            raise ValueError(f"{op}: {name} must have shape {shape} for x {x_shape} and w_hh {w_shape}, got {tuple(tensors[name].shape)}")
    arrays = [value._data for value in tensors.values()]
    first = arrays[0].dtype
    if first in _KERNEL_DTYPES and all(a.dtype == first and is_host(a) for a in arrays):
        return
    dtypes = {name: str(value.dtype) for name, value in tensors.items()}
    if len(set(dtypes.values())) != 1 or first not in _KERNEL_DTYPES:
        raise TypeError(f"{op}: expected float32 or float64 tensors of one dtype, got {dtypes}")
    devices = {name: str(value.device) for name, value in tensors.items()}
    if len(set(devices.values())) != 1:
        raise ValueError(f"{op}: tensors on different devices: {devices}")


def _host_step_operands(gates: int, x: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, states: Any) -> bool:
    """Whether a step's operands pass every test of `_check`: host tensors of one kernel dtype in
    the shapes the step needs. A cell runs this once a time step, so it reads the arrays directly,
    without the dicts and Size objects that `_check`'s messages need (8 of an LSTMCell step's ~80
    us); anything else goes through `_check`, which raises naming the operand."""
    if not (isinstance(x, Tensor) and isinstance(w_ih, Tensor) and isinstance(w_hh, Tensor)):
        return False
    x_data, w_ih_data, w_hh_data = x._data, w_ih._data, w_hh._data
    dtype, w_shape = x_data.dtype, w_hh_data.shape
    if (
        dtype not in _KERNEL_DTYPES
        or x_data.ndim != 2
        or len(w_shape) != 2
        or w_shape[1] == 0
        or w_shape[0] != gates * w_shape[1]
        or w_ih_data.shape != (w_shape[0], x_data.shape[1])
    ):
        return False
    arrays = [x_data, w_ih_data, w_hh_data]
    state_shape = (x_data.shape[0], w_shape[1])
    for state in states:
        if not isinstance(state, Tensor) or state._data.shape != state_shape:
            return False
        arrays.append(state._data)
    for bias in (b_ih, b_hh):
        if bias is not None:
            if not isinstance(bias, Tensor) or bias._data.shape != (w_shape[0],):
                return False
            arrays.append(bias._data)
    for array in arrays:
        if array.dtype != dtype or not is_host(array):
            return False
    return True
