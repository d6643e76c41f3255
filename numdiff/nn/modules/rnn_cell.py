"""One-step recurrent cells (RNNCell, LSTMCell, GRUCell) and the step functions that RNN, LSTM and
GRU run once per time step.

Parameters are PyTorch's (``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``; gates stacked
LSTM i, f, g, o and GRU r, z, n).

Run eagerly, a cell's step is one op of its family (numdiff.ops.recurrent_cell): the input GEMM,
then the sequence kernel over one step (the product with W_hh and the gates), and one backward,
where the step composed from differentiable ops records some fifteen ops each way. A
hand-written loop of 30 steps (batch 16, 32 -> 64, float32, forward and backward, one thread,
thread CPU time) took LSTMCell 16.6 -> 9.0 ms (PyTorch 4.5), GRUCell 16.6 -> 9.2 (4.4), RNNCell
7.5 -> 7.0 (2.1) as the sequence op of one step with the input Linear, b_ih + b_hh, the unsqueeze
and the [0] recorded around it; as one op, LSTMCell 6.8 -> 5.1 ms (PyTorch 5.3), GRUCell
(batch 8, 32 -> 128) 7.8 -> 4.8 (6.3), RNNCell 4.6 -> 2.9 (2.1) on a loaded machine. A batch of a few rows against a large hidden size, and vmap, keep the composed
step (see `RNNCellBase._one_step_op`). Under numdiff.compile the step stays composed too: compile
fuses its gate arithmetic into one loop, and the sequence op's fixed cost per call made the
compiled loops slower (LSTMCell 2.9 -> 3.4 ms, RNNCell 1.3 -> 2.3). The composed step functions below also serve the dtypes the
kernels lack (float16, bfloat16), an ONNX export, and RNN's stepwise cases (proj_size, packed input).
"""

from __future__ import annotations

import math
from typing import Any

from numdiff._dtype import float32, float64
from numdiff.autograd.transform_state import graph_recording, vmap_active
from numdiff.creation import empty, zeros
from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.nn import init
from numdiff.nn.modules._checks import layer_name
from numdiff.nn.modules.module import Module
from numdiff.nn.parameter import Parameter
from numdiff.onnx._state import exporting as onnx_exporting
from numdiff.ops._stacked_outputs import unstack_outputs
from numdiff.ops._util import vmapped
from numdiff.ops.linalg import matmul
from numdiff.ops.recurrent_cell import gru_cell_step, lstm_cell_step, rnn_cell_step
from numdiff.tensor import Tensor


# ----------------------------------------------------------------------------- one time step
# Each step takes W_hh already transposed (transposed once per sequence, not once per step) and
# b_hh as None when the caller has folded it into x_proj: both save a recorded op per time step.
def hidden_product(h: Tensor, w_hh_t: Tensor, b_hh: Tensor | None) -> Tensor:
    out = matmul(h, w_hh_t)
    return out if b_hh is None else out + b_hh


def rnn_step(x_proj: Tensor, h: Tensor, w_hh_t: Tensor, b_hh: Tensor | None, relu: bool) -> Tensor:
    """h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh); `x_proj` already holds the input half."""
    pre = x_proj + hidden_product(h, w_hh_t, b_hh)
    return functional.relu(pre) if relu else pre.tanh()


def lstm_step(
    x_proj: Tensor, h: Tensor, c: Tensor, w_hh_t: Tensor, b_hh: Tensor | None, w_hr: Tensor | None
) -> tuple[Tensor, Tensor]:
    """c' = f*c + i*g and h' = o*tanh(c') (projected by W_hr when given), gates in order i, f, g, o."""
    gates = x_proj + hidden_product(h, w_hh_t, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c_next = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h_next = o.sigmoid() * c_next.tanh()
    if w_hr is not None:
        h_next = functional.linear(h_next, w_hr)
    return h_next, c_next


def gru_step(x_proj: Tensor, h: Tensor, w_hh_t: Tensor, b_hh: Tensor | None) -> Tensor:
    """h' = (1 - z) * n + z * h with n = tanh(x_n + r * (h W_hn^T + b_hn)), gates in order r, z, n.
    b_hh stays per step: b_hn sits inside r * (...), so it cannot be folded into x_proj."""
    x_r, x_z, x_n = x_proj.chunk(3, -1)
    h_r, h_z, h_n = hidden_product(h, w_hh_t, b_hh).chunk(3, -1)
    r = (x_r + h_r).sigmoid()
    z = (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return n + z * (h - n)


# ----------------------------------------------------------------------------- cells
_HIDDEN_PER_BATCH_ROW = 512
"""A cell runs the one-step sequence op while hidden_size <= this x batch (see `_one_step_op`)."""

class RNNCellBase(Module):
    """Parameters (weight_ih, weight_hh, bias_ih, bias_hh) and checks shared by the cells."""

    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        name = type(self).__name__
        if input_size < 0 or hidden_size < 1:
            raise ValueError(f"{name}: input_size must be >= 0 and hidden_size >= 1, got {input_size} and {hidden_size}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gate_size = self._gates * hidden_size
        self.weight_ih = Parameter(empty(gate_size, input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(empty(gate_size, hidden_size, dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(empty(gate_size, dtype=dtype, device=device))
            self.bias_hh = Parameter(empty(gate_size, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _prepare(self, input: Any, states: tuple[Any, ...], names: tuple[str, ...]) -> tuple[Tensor, list[Tensor], bool]:
        """Check input (N, H_in) or (H_in,) and the states; give them a batch dim and zeros for None.
        The layer's name (extra_repr) is built only for an error: a cell runs this once a step."""
        if not isinstance(input, Tensor):
            raise TypeError(f"{layer_name(self)}: expected a Tensor input, got {type(input).__name__}")
        shape = input.shape
        if len(shape) not in (1, 2) or shape[-1] != self.input_size:
            raise ValueError(f"{layer_name(self)}: expected input of shape (N, {self.input_size}) or ({self.input_size},), got {tuple(shape)}")
        batched = len(shape) == 2
        if not batched:
            input = input.unsqueeze(0)
        rows = input.shape[0]
        expected = (rows, self.hidden_size) if batched else (self.hidden_size,)
        prepared = []
        for state, what in zip(states, names):
            if state is None:
                state = zeros(rows, self.hidden_size, dtype=input.dtype, device=input.device)
            else:
                if not isinstance(state, Tensor):
                    raise TypeError(f"{layer_name(self)}: {what} must be a Tensor, got {type(state).__name__}")
                if tuple(state.shape) != expected:
                    raise ValueError(f"{layer_name(self)}: expected {what} of shape {expected} for input of shape {tuple(input.shape if batched else input.shape[1:])}, got {tuple(state.shape)}")
                state = state if batched else state.unsqueeze(0)
            prepared.append(state)
        return input, prepared, batched

    def _one_step_op(self, x: Tensor, *states: Tensor) -> bool:
        """Whether this step runs as its family's cell-step op: eagerly and outside vmap,
        in the kernels' dtypes, not while exporting to ONNX (which has no form of these ops),
        and unless the batch is small against the hidden size. At batch 1 (float32, one thread, 10 steps
        forward and backward) the op paid up to H = 512 once its one-step backward stopped copying
        W_hh^T (LSTMCell 9.8 -> 7.0 ms, GRUCell 9.2 -> 7.7, RNNCell 3.8 -> 3.3; PyTorch 5.3, 4.8,
        1.8); at H = 1024 the two were even (LSTMCell 38.6 and 40.9 ms)."""
        small_batch = self.hidden_size > _HIDDEN_PER_BATCH_ROW * x.shape[0]
        # Under vmap the composed step batches op by op (the cell-step ops batch only with shared
        # weights, and per-example weights are vmap's usual case).
        # vmap_active() first: outside vmap the weights are not looked up (a module attribute each).
        eager = not graph_recording() and not (vmap_active() and vmapped(x, *states, self.weight_ih, self.weight_hh))
        return x.dtype in (float32, float64) and not onnx_exporting[0] and eager and not small_batch

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        return s + (f", nonlinearity={nonlinearity}" if nonlinearity != "tanh" else "")


class RNNCell(RNNCellBase):
    """One Elman step: h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh).

    >>> RNNCell(4, 8)(numdiff.randn(3, 4)).shape
    numdiff.Size([3, 8])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: unknown nonlinearity {nonlinearity!r}; choose 'tanh' or 'relu'")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched = self._prepare(input, (hx,), ("hx",))
        relu = self.nonlinearity == "relu"
        if self._one_step_op(x, h):
            h = rnn_cell_step(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, relu)
        else:
            h = rnn_step(functional.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh.t(), self.bias_hh, relu)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: forward(input, (h, c)) -> (h', c'), gates in order i, f, g, o.

    >>> h, c = LSTMCell(4, 8)(numdiff.randn(3, 4))
    """

    _gates = 4

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"{layer_name(self)}: hx must be a tuple (h, c), got {type(hx).__name__}")
        x, (h, c), batched = self._prepare(input, tuple(hx) if hx is not None else (None, None), ("h", "c"))
        if self._one_step_op(x, h, c):
            h, c = unstack_outputs(lstm_cell_step(x, h, c, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh))
        else:
            h, c = lstm_step(functional.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh.t(), self.bias_hh, None)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: h' = (1 - z) * n + z * h, gates in order r, z, n.

    >>> GRUCell(4, 8)(numdiff.randn(3, 4)).shape
    numdiff.Size([3, 8])
    """

    _gates = 3

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched = self._prepare(input, (hx,), ("hx",))
        if self._one_step_op(x, h):
            h = gru_cell_step(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        else:
            h = gru_step(functional.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh.t(), self.bias_hh)
        return h if batched else h.squeeze(0)


__all__ = ["GRUCell", "LSTMCell", "RNNCell", "RNNCellBase", "gru_step", "hidden_product", "lstm_step", "rnn_step"]
