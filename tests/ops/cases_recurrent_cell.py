"""Cases for numdiff/ops/recurrent_cell.py: lstm_cell_step, gru_cell_step and rnn_cell_step against
the NumPy loops of tests/ops/cases_recurrent.py over one step of the projected input."""

from __future__ import annotations

import numpy as np

from numdiff.ops import recurrent_cell
from tests.ops.cases_recurrent import gru_reference, lstm_reference, rnn_reference
from tests.ops.op_cases import OpCase, args, normal

CLOSE = dict(forward_rtol=1e-10, forward_atol=1e-12)
N, IN, H = 3, 4, 2


def _projected(x, w_ih, *biases):
    """x W_ih^T plus the biases given, as a sequence of one step."""
    return (x @ w_ih.T + sum(b for b in biases if b is not None))[None]


def _lstm(x, h, c, w_ih, w_hh, b_ih=None, b_hh=None):
    return lstm_reference(_projected(x, w_ih, b_ih, b_hh), h, c, w_hh)


def _gru(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    return gru_reference(_projected(x, w_ih, b_ih), h, w_hh, np.zeros(3 * H) if b_hh is None else b_hh)[0]


def _rnn(relu):
    return lambda x, h, w_ih, w_hh, b_ih=None, b_hh=None: rnn_reference(_projected(x, w_ih, b_ih, b_hh), h, w_hh, relu)[0]


def _relu_away_from_zero(rng):
    """A relu step whose pre-activations stay clear of 0 (gradcheck steps over no kink): small
    weights and states, and biases of +-1."""
    signs = rng.choice([-1.0, 1.0], H)
    small = [rng.uniform(-0.1, 0.1, shape) for shape in ((N, IN), (N, H), (H, IN), (H, H))]
    return (*small, signs, 0.1 * signs)


CASES = [
    OpCase(
        "lstm_cell_step", "bias",
        args(normal(N, IN), normal(N, H), normal(N, H), normal(4 * H, IN), normal(4 * H, H), normal(4 * H), normal(4 * H)),
        recurrent_cell.lstm_cell_step, _lstm, **CLOSE,
    ),
    OpCase(
        "lstm_cell_step", "no-bias", args(normal(N, IN), normal(N, H), normal(N, H), normal(4 * H, IN), normal(4 * H, H)),
        recurrent_cell.lstm_cell_step, _lstm, **CLOSE,
    ),
    OpCase(
        "gru_cell_step", "bias",
        args(normal(N, IN), normal(N, H), normal(3 * H, IN), normal(3 * H, H), normal(3 * H), normal(3 * H)),
        recurrent_cell.gru_cell_step, _gru, **CLOSE,
    ),
    OpCase(
        "gru_cell_step", "no-bias", args(normal(N, IN), normal(N, H), normal(3 * H, IN), normal(3 * H, H)),
        recurrent_cell.gru_cell_step, _gru, **CLOSE,
    ),
    OpCase(
        "rnn_cell_step", "tanh", args(normal(N, IN), normal(N, H), normal(H, IN), normal(H, H), normal(H), normal(H)),
        recurrent_cell.rnn_cell_step, _rnn(False), **CLOSE,
    ),
    OpCase(
        "rnn_cell_step", "relu", _relu_away_from_zero,
        lambda *tensors: recurrent_cell.rnn_cell_step(*tensors, relu=True), _rnn(True), **CLOSE,
    ),
]  # fmt: skip
