"""Recurrent layers: RNN (tanh/relu), LSTM and GRU over whole sequences, and their one-step Cells.

Parameter names, shapes, gate order and initialisation are PyTorch's, so a torch state_dict loads:
``weight_ih_l{k}`` (gates * hidden, input), ``weight_hh_l{k}`` (gates * hidden, hidden),
``bias_ih_l{k}``, ``bias_hh_l{k}``, with ``_reverse`` for the backward direction (and LSTM's
``weight_hr_l{k}`` when proj_size > 0). Gates stack as LSTM (i, f, g, o) and GRU (r, z, n).

Each layer and direction projects the whole input sequence with one matmul, then runs the time
loop as one recurrent op (numdiff.ops.recurrent: lstm_sequence, gru_sequence, rnn_sequence), whose
kernels hold the loop and the backward through time; a tape or compiled graph gets one node per
layer and direction whatever the sequence length. A PackedSequence runs on its packed rows, one
sequence op per run of steps with one batch size (numdiff.nn.modules._rnn_packed), and an LSTM
with proj_size as one lstm_sequence too where that is cheaper (numdiff.nn.modules._rnn_projection). Some cases run
step by step instead, composed from differentiable ops with the step functions of rnn_cell.py
(where the one-step cells live, importable from here too, as in PyTorch): dtypes other than
float32/float64, an LSTM whose projection is cheaper per step, and an ONNX export (the sequence ops have no ONNX form); a
PackedSequence among them runs padded in its length-sorted order with each sequence's state held
once the sequence has ended (so h_n is its last valid step's, as in PyTorch).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from numdiff._dtype import float32, float64
from numdiff.creation import empty, tensor
from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.nn import init
from numdiff.nn.modules._checks import layer_name
from numdiff.nn.modules._rnn_args import check_input, initial_states
from numdiff.nn.modules._rnn_packed import run_packed, runs_of_batch_sizes
from numdiff.nn.modules._rnn_projection import fuses_projection, lstm_projected_sequence
from numdiff.nn.modules.module import Module
from numdiff.nn.modules.rnn_cell import (
    GRUCell,
    LSTMCell,
    RNNCell,
    RNNCellBase,
    gru_step,
    lstm_step,
    rnn_step,
)
from numdiff.nn.parameter import Parameter
from numdiff.nn.utils.rnn import PackedSequence, pad_packed_sequence
from numdiff.onnx._state import exporting as onnx_exporting
from numdiff.ops.joining import cat, stack
from numdiff.ops.recurrent import gru_sequence, lstm_sequence, rnn_sequence
from numdiff.ops.selection import where
from numdiff.tensor import Tensor

_KERNEL_DTYPES = (float32, float64)  # the recurrent kernels' dtypes; others run step by step
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# ----------------------------------------------------------------------------- whole sequences
class RNNBase(Module):
    """Shared parameters, checks and the layer/direction loop of RNN, LSTM and GRU."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        for arg, value, low in (("input_size", input_size, 0), ("hidden_size", hidden_size, 1), ("num_layers", num_layers, 1)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name}: {arg} must be an integer >= {low}, got {value!r}")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= dropout <= 1.0:
            raise ValueError(f"{name}: dropout should be a number in range [0, 1] representing the probability of an element being zeroed, got {dropout!r}")
        if proj_size < 0 or proj_size >= hidden_size or (proj_size and mode != "LSTM"):
            raise ValueError(f"{name}: proj_size must be 0, or (LSTM only) positive and smaller than hidden_size={hidden_size}, got {proj_size}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                f"{name}: dropout={dropout} acts between layers, so it does nothing with num_layers=1", UserWarning, stacklevel=3
            )
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        out_size = proj_size or hidden_size
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else out_size * self.num_directions
            for suffix in self._suffixes(layer):
                shapes = {"weight_ih": (gate_size, layer_input), "weight_hh": (gate_size, out_size)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                for kind, shape in shapes.items():
                    setattr(self, kind + suffix, Parameter(empty(*shape, dtype=dtype, device=device)))
        self.reset_parameters()

    @property
    def num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    def _suffixes(self, layer: int) -> list[str]:
        return [f"_l{layer}", f"_l{layer}_reverse"][: self.num_directions]

    def reset_parameters(self) -> None:
        """Every weight and bias ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def flatten_parameters(self) -> None:
        """Accepted for PyTorch code that calls it: numdiff keeps no packed cuDNN weight buffer to rebuild."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters grouped per layer and direction, as PyTorch's ``all_weights``."""
        kinds = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")
        return [
            [weight for weight in map(self._weight, (kind + suffix for kind in kinds)) if weight is not None]
            for layer in range(self.num_layers)
            for suffix in self._suffixes(layer)
        ]

    def _weight(self, name: str) -> Tensor | None:
        # A parametrized weight (utils.parametrizations.orthogonal on weight_hh_l0, say) is no longer
        # in _parameters: its property computes it, as PyTorch's RNN reads it through getattr.
        parameters = self._parameters
        return parameters[name] if name in parameters else getattr(self, name, None)

    def _weights(self, suffix: str) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None, Tensor | None]:
        weight = self._weight
        return weight("weight_ih" + suffix), weight("weight_hh" + suffix), weight("bias_ih" + suffix), weight("bias_hh" + suffix), weight("weight_hr" + suffix)

    def _fuses(self, batch: int) -> bool:
        """Whether the layer runs as sequence ops: always without projections, and with them while
        the recurrence of numdiff.nn.modules._rnn_projection costs less than a loop of steps."""
        return not self.proj_size or fuses_projection(batch, self.hidden_size, self.proj_size)

    # -------------------------------------------------------------- the loop
    def _run(
        self, input: Tensor, states: list[Any], running: Tensor | None = None, runs: list[tuple[int, int, int]] | None = None
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """input (L, N, H_in); states[k] the (h, c) or h of layer-direction k; running (L, N, 1) bool,
        False past each sequence's end (packed input run padded). With `runs` (numdiff.nn.modules._rnn_packed),
        input is a PackedSequence's data (sum of lengths, H_in) and so is the output. Returns output, h_n, c_n lists,
        each final state (1, N, H), so that `_joined` makes a one-layer-direction h_n without an op."""
        h_final: list[Tensor] = []
        c_final: list[Tensor] = []
        layer_input = input
        for layer in range(self.num_layers):
            outputs = []
            for direction, suffix in enumerate(self._suffixes(layer)):
                index = layer * self.num_directions + direction
                if runs is not None:
                    out, h_n, c_n = self._run_packed_direction(layer_input, states[index], suffix, direction == 1, runs)
                else:
                    out, h_n, c_n = self._run_direction(layer_input, states[index], suffix, direction == 1, running)
                outputs.append(out)
                h_final.append(h_n)
                if c_n is not None:
                    c_final.append(c_n)
            layer_input = outputs[0] if len(outputs) == 1 else cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = functional.dropout(layer_input, self.dropout, True)
        return layer_input, h_final, c_final

    def _run_direction(self, input: Tensor, state: Any, suffix: str, reverse: bool, running: Tensor | None) -> tuple[Tensor, Tensor, Tensor | None]:
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(suffix)
        fused = running is None and self._fuses(input.shape[1]) and input.dtype in _KERNEL_DTYPES and not onnx_exporting[0]
        if fused and input.shape[0]:
            return self._run_sequence_op(input, state, w_ih, w_hh, b_ih, b_hh, w_hr, reverse)
        projected = functional.linear(input, w_ih, b_ih)  # every time step's input half at once
        if b_hh is not None and self.mode != "GRU":
            projected, b_hh = projected + b_hh, None
        w_hh_t = w_hh.t()
        steps = range(input.shape[0] - 1, -1, -1) if reverse else range(input.shape[0])
        h, c = state if self.mode == "LSTM" else (state, None)
        outputs: list[Tensor] = [None] * input.shape[0]  # type: ignore[list-item]
        for t in steps:
            if self.mode == "LSTM":
                h_next, c_next = lstm_step(projected[t], h, c, w_hh_t, b_hh, w_hr)
            elif self.mode == "GRU":
                h_next, c_next = gru_step(projected[t], h, w_hh_t, b_hh), None
            else:
                h_next, c_next = rnn_step(projected[t], h, w_hh_t, b_hh, relu=self.mode == "RNN_RELU"), None
            if running is not None:
                # A finished sequence keeps its state, so h_n is its last valid step's, and the
                # reverse direction starts each sequence at its own last step.
                h_next = where(running[t], h_next, h)
                c_next = where(running[t], c_next, c) if c is not None else None
            h, c = h_next, c_next
            outputs[t] = h
        if not outputs:
            raise ValueError(f"{layer_name(self)}: expected a sequence of length >= 1, got input of shape {tuple(input.shape)}")
        return stack(outputs, 0), h.unsqueeze(0), (c.unsqueeze(0) if c is not None else None)

    def _run_sequence_op(
        self, input: Tensor, state: Any, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None, w_hr: Tensor | None,
        reverse: bool,
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """The whole sequence as one recurrent op (numdiff.ops.recurrent): one node per layer and
        direction, the time loop inside the kernel. The reverse direction runs on the sequence
        flipped in time, flipping the narrower of the input (L, N, H_in) and the projection (L, N,
        gates * H): each flip is a copy forward and another backward, and the projection of a
        flipped input is contiguous for the op and its weight gradient (two-layer bidirectional LSTM
        48 -> 64, 40 steps x 24, forward and backward, one thread: 12.9 -> 12.7 ms at load 12)."""
        flip_input = reverse and input.shape[-1] < w_ih.shape[0]
        projected, b_hh = self._projection(input.flip(0) if flip_input else input, w_ih, b_ih, b_hh)
        if reverse and not flip_input:
            projected = projected.flip(0)
        states, h_n, c_n = self._sequence(projected, state, w_hh, b_hh, w_hr, keepdim=True)
        return (states.flip(0) if reverse else states), h_n, c_n

    def _projection(self, input: Tensor, w_ih: Tensor, b_ih: Tensor | None, b_hh: Tensor | None) -> tuple[Tensor, Tensor | None]:
        """Every step's input half of the gates, one matmul; and the b_hh the sequence op still takes
        (GRU's: LSTM's and RNN's add straight to the gates, so they join b_ih here)."""
        if b_hh is not None and self.mode != "GRU":
            b_ih, b_hh = b_ih + b_hh, None
        return functional.linear(input, w_ih, b_ih), b_hh

    def _sequence(
        self, projected: Tensor, state: Any, w_hh: Tensor, b_hh: Tensor | None, w_hr: Tensor | None, keepdim: bool = False
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """The sequence op of this layer's mode over projected (L, N, G): h_1 .. h_L, h_L, c_L (LSTM) or
        None; h_L and c_L (N, H), or (1, N, H) with `keepdim` (slices of the op's output: no stack later).
        An LSTM with projections (w_hr) runs as numdiff.nn.modules._rnn_projection lays out."""
        steps = projected.shape[0]
        if w_hr is not None:
            states, c_n = lstm_projected_sequence(projected, state[0], state[1], w_hh, w_hr)
            if keepdim:
                return states, states[steps - 1 :], c_n.unsqueeze(0)
            return states, states[steps - 1], c_n
        if self.mode == "LSTM":
            out = lstm_sequence(projected, state[0], state[1], w_hh)  # h_1 .. h_L, then c_L
            if keepdim:
                return out[:steps], out[steps - 1 : steps], out[steps:]
            return out[:steps], out[steps - 1], out[steps]
        if self.mode == "GRU":
            states = gru_sequence(projected, state, w_hh, b_hh)
        else:
            states = rnn_sequence(projected, state, w_hh, relu=self.mode == "RNN_RELU")
        return states, (states[steps - 1 :] if keepdim else states[steps - 1]), None

    def _run_packed_direction(
        self, data: Tensor, state: Any, suffix: str, reverse: bool, runs: list[tuple[int, int, int]]
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """One layer direction over a PackedSequence's rows, one sequence op per run of steps with one
        batch size (numdiff.nn.modules._rnn_packed)."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(suffix)
        projected, b_hh = self._projection(data, w_ih, b_ih, b_hh)
        lstm = self.mode == "LSTM"

        def sequence(block: Tensor, start: tuple[Tensor, ...]) -> tuple[Tensor, tuple[Tensor, ...]]:
            states, h_n, c_n = self._sequence(block, start if lstm else start[0], w_hh, b_hh, w_hr)
            return states, ((h_n, c_n) if lstm else (h_n,))

        out, final = run_packed(sequence, projected, runs, tuple(state) if lstm else (state,), reverse)
        return out, final[0].unsqueeze(0), (final[1].unsqueeze(0) if lstm else None)

    def forward(self, input: Tensor | PackedSequence, hx: Any = None) -> tuple[Any, Any]:
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        batched = check_input(self, input)
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        states = initial_states(self, hx, input.shape[1], batched, input)
        output, h_n, c_n = self._run(input, states)
        h_n = _joined(h_n)
        c_n = _joined(c_n) if c_n else None
        if not batched:
            output = output.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, ((h_n, c_n) if self.mode == "LSTM" else h_n)

    def _forward_packed(self, packed: PackedSequence, hx: Any) -> tuple[PackedSequence, Any]:
        """Run a PackedSequence on its packed rows by runs of one batch size, or (the step-by-step
        cases) padded in its sorted order, each sequence masked past its end."""
        data = packed.data
        if not isinstance(data, Tensor) or data.ndim != 2 or data.shape[-1] != self.input_size:
            raise ValueError(f"{layer_name(self)}: expected PackedSequence data of shape (sum of lengths, {self.input_size}), got {tuple(getattr(data, 'shape', ()))}")
        check_input(self, data.unsqueeze(1))
        sizes = packed.batch_sizes.detach().cpu().numpy()
        if self._fuses(int(sizes[0])) and data.dtype in _KERNEL_DTYPES and not onnx_exporting[0]:
            states = initial_states(self, hx, int(sizes[0]), True, data, packed.sorted_indices)
            output, h_n, c_n = self._run(data, states, runs=runs_of_batch_sizes(sizes))
            return self._packed_result(packed, output, h_n, c_n)
        padded, _ = pad_packed_sequence(PackedSequence(data, packed.batch_sizes))
        lengths = (sizes[None, :] > np.arange(int(sizes[0]))[:, None]).sum(1)
        running = tensor((np.arange(len(sizes))[:, None] < lengths[None, :])[..., None], device=data.device)
        states = initial_states(self, hx, padded.shape[1], True, padded, packed.sorted_indices)
        output, h_n, c_n = self._run(padded, states, running)
        return self._packed_result(packed, cat([output[t, : int(size)] for t, size in enumerate(sizes)], 0), h_n, c_n)

    def _packed_result(self, packed: PackedSequence, data: Tensor, h_n: list[Tensor], c_n: list[Tensor]) -> tuple[PackedSequence, Any]:
        """The output PackedSequence and the final states in the caller's batch order."""
        output = PackedSequence(data, *packed[1:])
        finals = [_joined(h_n)] + ([_joined(c_n)] if c_n else [])
        if packed.unsorted_indices is not None:
            finals = [f.index_select(1, packed.unsorted_indices) for f in finals]
        return output, (tuple(finals) if self.mode == "LSTM" else finals[0])

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


def _joined(finals: list[Tensor]) -> Tensor:
    """h_n or c_n (layers * directions, N, H) from each layer-direction's (1, N, H), a tensor of its
    own as PyTorch's (not a view of the sequence op's output: a program may write into h_n, e.g.
    zero the rows of finished episodes, while recording). One op: a stack of one was an unsqueeze
    and a copy."""
    return finals[0].clone() if len(finals) == 1 else cat(finals, 0)


class RNN(RNNBase):
    """Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act = tanh or relu.

    >>> rnn = RNN(4, 8, num_layers=2, batch_first=True)
    >>> output, h_n = rnn(numdiff.randn(3, 5, 4))   # output (3, 5, 8), h_n (2, 3, 8)
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh", *args: Any, **kwargs: Any) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: unknown nonlinearity {nonlinearity!r}; choose 'tanh' or 'relu'")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers, *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory over a sequence; forward(input, (h_0, c_0)) -> output, (h_n, c_n).

    >>> lstm = LSTM(4, 8)
    >>> output, (h_n, c_n) = lstm(numdiff.randn(5, 3, 4))   # output (5, 3, 8)
    """

    def __init__(self, input_size: int, hidden_size: int, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", input_size, hidden_size, *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit over a sequence; forward(input, h_0) -> output, h_n.

    >>> output, h_n = GRU(4, 8, bidirectional=True)(numdiff.randn(5, 3, 4))   # output (5, 3, 16)
    """

    def __init__(self, input_size: int, hidden_size: int, *args: Any, **kwargs: Any) -> None:
        super().__init__("GRU", input_size, hidden_size, *args, **kwargs)


__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]
