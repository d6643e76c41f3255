"""The recurrent layers' arguments (numdiff.nn.modules.rnn): the input and initial-state checks,
with PyTorch's shapes in their messages, and the per-layer-direction initial states made from hx
(zeros when it is None), reordered for a packed sequence's length-sorted batch.

Each takes the layer (an RNNBase) first and reads only its configuration.
"""

from __future__ import annotations

from typing import Any

from numdiff.amp import casts_on
from numdiff.creation import zeros
from numdiff.nn.modules._checks import layer_name
from numdiff.tensor import Tensor

__all__ = ["check_input", "check_state", "initial_states"]


def check_input(layer: Any, input: Any) -> bool:
    """Validate the input; True when it has a batch dimension."""
    name = layer_name(layer)
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: expected a Tensor or PackedSequence input, got {type(input).__name__}")
    if input.ndim not in (2, 3):
        layout = "(N, L, H_in)" if layer.batch_first else "(L, N, H_in)"
        raise ValueError(f"{name}: expected input of shape {layout} or (L, H_in) for unbatched, got {tuple(input.shape)} ({input.ndim}-D)")
    if input.shape[-1] != layer.input_size:
        raise ValueError(f"{name}: input.size(-1) must be equal to input_size. Expected {layer.input_size}, got {input.shape[-1]} (input shape {tuple(input.shape)})")
    if not input.is_floating_point():
        raise TypeError(f"{name}: expected a floating point input, got dtype {input.dtype!r}")
    if input.dtype is not layer.weight_ih_l0.dtype and not casts_on(input):
        raise TypeError(f"{name}: input is {input.dtype!r} but the layer's weights are {layer.weight_ih_l0.dtype!r}; convert one with .to(dtype)")
    return input.ndim == 3


def check_state(layer: Any, state: Any, what: str, expected: tuple[int, ...], batched: bool, like: Tensor) -> None:
    name = layer_name(layer)
    if not isinstance(state, Tensor):
        raise TypeError(f"{name}: {what} must be a Tensor, got {type(state).__name__}")
    if state.ndim != len(expected):
        kind = "batched 3-D" if batched else "unbatched 2-D"
        raise ValueError(f"{name}: for {kind} input, {what} should be {len(expected)}-D with shape {expected}, got shape {tuple(state.shape)}")
    if tuple(state.shape) != expected:
        raise ValueError(f"{name}: expected {what} of shape {expected}, got {tuple(state.shape)}")
    if state.dtype != like.dtype and not casts_on(like):  # under autocast the op casts both
        raise TypeError(f"{name}: input and {what} must have the same dtype, got {like.dtype!r} and {state.dtype!r}")


def initial_states(layer: Any, hx: Any, batch: int, batched: bool, like: Tensor, order: Tensor | None = None) -> list[Any]:
    """The per-layer-direction initial states (zeros when hx is None), each (N, H); `order`
    reorders the batch (packed sequences run sorted by length)."""
    count = layer.num_layers * layer.num_directions
    out_size = layer.proj_size or layer.hidden_size
    h_shape = (count, batch, out_size) if batched else (count, out_size)
    c_shape = (count, batch, layer.hidden_size) if batched else (count, layer.hidden_size)
    if layer.mode == "LSTM":
        if hx is None:
            h0 = zeros(*h_shape, dtype=like.dtype, device=like.device)
            c0 = zeros(*c_shape, dtype=like.dtype, device=like.device)
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"{layer_name(layer)}: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
            h0, c0 = hx
            check_state(layer, h0, "h_0", h_shape, batched, like)
            check_state(layer, c0, "c_0", c_shape, batched, like)
        if not batched:
            h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        if order is not None:
            h0, c0 = h0.index_select(1, order), c0.index_select(1, order)
        return [(h0[k], c0[k]) for k in range(count)]
    if hx is None:
        h0 = zeros(*h_shape, dtype=like.dtype, device=like.device)
    else:
        check_state(layer, hx, "hx", h_shape, batched, like)
        h0 = hx
    if not batched:
        h0 = h0.unsqueeze(1)
    if order is not None:
        h0 = h0.index_select(1, order)
    return [h0[k] for k in range(count)]
