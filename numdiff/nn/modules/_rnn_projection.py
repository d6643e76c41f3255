"""An LSTM layer with projections (PyTorch's ``proj_size``) over a whole sequence, as one
``lstm_sequence`` op (numdiff.ops.recurrent) and three GEMMs.

With projections, the state handed from step to step is ``h_t = r_t W_hr^T`` (N, P), where ``r_t =
o * tanh(c_t)`` (N, H) is what the LSTM without projections would hand on. Each step's gates read
``h_{t-1} W_hh^T = r_{t-1} (W_hh W_hr)^T``, so the recurrence is the plain LSTM's with the recurrent
weight ``W_hh W_hr`` (4H, H), and the projection of every step is one GEMM afterwards over all of
them. The first step reads h_0 (N, P), which no r gives: its product ``h_0 W_hh^T`` joins the first
step's gates, and the kernel starts from r_0 = 0. The gradients (and second derivatives) come from
the ops the function is written in: the sequence op's backward kernel, then the GEMMs' own.

Cost: the recurrent product is (N, H) by (H, 4H) a step, against (N, P) by (P, 4H) plus the (N, H)
by (H, P) projection in a loop of steps: 4H / 5P times the multiply-adds (1.6x at P = H / 2),
against one recorded op per layer and direction instead of about a dozen per step. So the layer
takes this path while the extra multiply-adds of a step, N (4H^2 - 5HP), stay under
FUSED_MAX_EXTRA_MACS (:func:`fuses_projection`), and runs step by step past it. Measured (forward and
backward, float32, one thread, thread CPU time, min of 9, load 12; this path / step by step /
PyTorch, ms; extra multiply-adds a step): input 64, H 128, P 64, 64 steps x batch 16 (0.4M) 10.9 /
35.5 / 14.8; 128, 256, 128, 50 x 32 (3.1M) 56 / 72 / 49; 256, 512, 256, 32 x 8 (3.1M) 53 / 67 / 41;
but 128, 512, 128, 32 x 16 (11.5M) 66 / 54 / 35; 128, 256, 64, 32 x 64 (11.5M) 63 / 57 / 42; 128,
512, 128, 32 x 32 (23M) 110 / 82 / 53.
"""

from __future__ import annotations

from numdiff.ops.joining import cat
from numdiff.ops.recurrent import lstm_sequence
from numdiff.tensor import Tensor

__all__ = ["FUSED_MAX_EXTRA_MACS", "fuses_projection", "lstm_projected_sequence"]

FUSED_MAX_EXTRA_MACS = 1 << 22


def fuses_projection(batch: int, hidden: int, proj: int) -> bool:
    """Whether an LSTM layer with projections runs as :func:`lstm_projected_sequence` (the module
    docstring's rule): its extra multiply-adds per step, batch (4 hidden^2 - 5 hidden proj), are at
    most FUSED_MAX_EXTRA_MACS.

    >>> fuses_projection(16, 128, 64), fuses_projection(32, 512, 128)
    (True, False)
    """
    return batch * (4 * hidden * hidden - 5 * hidden * proj) <= FUSED_MAX_EXTRA_MACS


def lstm_projected_sequence(projected: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor, w_hr: Tensor) -> tuple[Tensor, Tensor]:
    """One LSTM layer with projections over a sequence: (h_1 .. h_L (L, N, P), c_L (N, H)).

    projected (L, N, 4H) is every step's input half of the gates (biases included), h0 (N, P),
    c0 (N, H), w_hh (4H, P), w_hr (P, H).

    >>> import numdiff
    >>> h, c = lstm_projected_sequence(numdiff.zeros(5, 2, 16), numdiff.zeros(2, 3), numdiff.zeros(2, 4), numdiff.zeros(16, 3), numdiff.zeros(3, 4))
    >>> tuple(h.shape), tuple(c.shape)
    ((5, 2, 3), (2, 4))
    """
    _check(projected, h0, c0, w_hh, w_hr)
    steps = projected.shape[0]
    first = (projected[0] + h0 @ w_hh.t()).unsqueeze(0)
    gates = cat([first, projected[1:]], 0) if steps > 1 else first
    out = lstm_sequence(gates, c0.new_zeros(tuple(c0.shape)), c0, w_hh @ w_hr)  # r_1 .. r_L, then c_L
    return out[:steps] @ w_hr.t(), out[steps]


def _check(projected: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor, w_hr: Tensor) -> None:
    """The shapes the projection adds to lstm_sequence's checks (which then check the rest)."""
    named = (("projected", projected), ("h0", h0), ("c0", c0), ("w_hh", w_hh), ("w_hr", w_hr))
    for name, value in named:
        if not isinstance(value, Tensor):
            raise TypeError(f"lstm_projected_sequence: {name} must be a Tensor, got {type(value).__name__}")
    shapes = {name: tuple(t.shape) for name, t in named}
    if len(shapes["w_hr"]) != 2 or len(shapes["projected"]) != 3 or len(shapes["h0"]) != 2 or len(shapes["w_hh"]) != 2:
        raise ValueError(f"lstm_projected_sequence: expected projected (L, N, 4H), h0 (N, P), c0 (N, H), w_hh (4H, P), w_hr (P, H); got {shapes}")
    proj, hidden = shapes["w_hr"]
    batch = shapes["projected"][1]
    expected = {"h0": (batch, proj), "c0": (batch, hidden), "w_hh": (4 * hidden, proj), "projected": (shapes["projected"][0], batch, 4 * hidden)}
    wrong = {name: shape for name, shape in expected.items() if shapes[name] != shape}
    if wrong:
        got = ", ".join(f"{name} {shapes[name]} (expected {expected[name]})" for name in wrong)
        raise ValueError(f"lstm_projected_sequence: shapes disagree with w_hr (P, H) = {shapes['w_hr']}: {got}")
    if proj >= hidden:
        raise ValueError(f"lstm_projected_sequence: w_hr (P, H) must have P < H, got {shapes['w_hr']}")
