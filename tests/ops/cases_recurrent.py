"""Cases for numdiff/ops/recurrent.py: lstm_sequence, gru_sequence, rnn_sequence against NumPy
loops, and their backward ops (reached only from a backward, so called here as registered ops)
against the gradients of the same recurrence composed from numdiff ops."""

from __future__ import annotations

import numpy as np

import numdiff
from numdiff.ops import _recurrent_recompute, recurrent
from tests.ops.op_cases import OpCase, args, normal

CLOSE = dict(forward_rtol=1e-10, forward_atol=1e-12)
L, N, H = 3, 2, 2


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _lstm_steps(projected, h0, c0, w_hh):
    """Every step's h (L, N, H) and the LSTM kernels' record (L, N, 5H) [c, i, f, g, o]."""
    h, c, hs, steps = h0, c0, [], []
    for x in projected:
        i, f, g, o = np.split(x + h @ w_hh.T, 4, -1)
        i, f, g, o = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
        c = f * c + i * g
        h = o * np.tanh(c)
        hs.append(h)
        steps.append(np.concatenate([c, i, f, g, o], -1))
    return np.stack(hs), np.stack(steps)


def lstm_record_reference(projected, h0, c0, w_hh):
    """The LSTM kernels' record of every step, (L, N, 5H) [c, i, f, g, o]."""
    return _lstm_steps(projected, h0, c0, w_hh)[1]


def lstm_reference(projected, h0, c0, w_hh):
    """lstm_sequence's output, (L + 1, N, H): h_1 .. h_L, then c_L."""
    hs, record = _lstm_steps(projected, h0, c0, w_hh)
    return np.concatenate([hs, record[-1:, :, : h0.shape[-1]]])


def gru_record_reference(projected, h0, w_hh, b_hh):
    """The GRU kernels' record of every step, (L, N, 5H) [h, r, z, n, hn]."""
    h, steps = h0, []
    for x in projected:
        x_r, x_z, x_n = np.split(x, 3, -1)
        h_r, h_z, hn = np.split(h @ w_hh.T + b_hh, 3, -1)
        r, z = _sigmoid(x_r + h_r), _sigmoid(x_z + h_z)
        n = np.tanh(x_n + r * hn)
        h = (1 - z) * n + z * h
        steps.append(np.concatenate([h, r, z, n, hn], -1))
    return np.stack(steps)


def gru_reference(projected, h0, w_hh, b_hh):
    """gru_sequence's output, (L, N, H): h_1 .. h_L."""
    return gru_record_reference(projected, h0, w_hh, b_hh)[..., : h0.shape[-1]]


def rnn_reference(projected, h0, w_hh, relu):
    h, steps = h0, []
    for x in projected:
        pre = x + h @ w_hh.T
        h = np.maximum(pre, 0.0) if relu else np.tanh(pre)
        steps.append(h)
    return np.stack(steps)


def _streams(recurrence, grad, projected, *rest, extra):
    """What a backward op returns, from autograd over the composed recurrence (NumPy in and out)."""
    leaves = [numdiff.tensor(a, requires_grad=True) for a in (projected, *rest)]
    zeros = [numdiff.zeros(projected.shape[0], projected.shape[1], rest[0].shape[-1], dtype=numdiff.float64, requires_grad=True) for _ in range(extra)]
    out = recurrence(*leaves, *zeros)
    return [g.numpy() for g in numdiff.autograd.grad(out, [leaves[0], *zeros], numdiff.tensor(grad))]


def _lstm_record(projected, h0, c0, w_hh):
    """lstm_record_reference in numdiff ops: the record a backward op reads, built from its inputs in
    ops numdiff.compile traces (a host read of the inputs would bake the first draw's record in)."""
    h, c, steps = h0, c0, []
    for x in projected.unbind(0):
        i, f, g, o = (x + h @ w_hh.mT).chunk(4, -1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c = f * c + i * g
        h = o * c.tanh()
        steps.append(numdiff.cat([c, i, f, g, o], -1))
    return numdiff.stack(steps)


def _gru_record(projected, h0, w_hh, b_hh):
    """gru_record_reference in numdiff ops (see _lstm_record)."""
    h, steps = h0, []
    for x in projected.unbind(0):
        x_r, x_z, x_n = x.chunk(3, -1)
        h_r, h_z, hn = (h @ w_hh.mT + b_hh).chunk(3, -1)
        r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
        n = (x_n + r * hn).tanh()
        h = (1 - z) * n + z * h
        steps.append(numdiff.cat([h, r, z, n, hn], -1))
    return numdiff.stack(steps)


def _lstm_backward(grad, projected, h0, c0, w_hh):
    record = _lstm_record(*(t.detach() for t in (projected, h0, c0, w_hh)))
    return recurrent.LSTMSequenceBackward.apply(grad, record, projected, h0, c0, w_hh)


def _flat(*blocks):
    """The backward ops' flat result (numdiff.kernels._recurrent_layout): blocks end to end."""
    return np.concatenate([b.reshape(-1) for b in blocks])


def _lstm_backward_reference(grad, projected, h0, c0, w_hh):
    d_projected, dh, dc = _streams(_recurrent_recompute.lstm_recurrence, grad, projected, h0, c0, w_hh, extra=2)
    return _flat(d_projected, dh[0], dc[0])


def _gru_backward(grad, projected, h0, w_hh, b_hh):
    record = _gru_record(*(t.detach() for t in (projected, h0, w_hh, b_hh)))
    return recurrent.GRUSequenceBackward.apply(grad, record, projected, h0, w_hh, b_hh)


def _gru_backward_reference(grad, projected, h0, w_hh, b_hh):
    d_projected, dh, dhn = _streams(_recurrent_recompute.gru_recurrence, grad, projected, h0, w_hh, b_hh, extra=2)
    hidden = h0.shape[-1]
    return _flat(d_projected, np.concatenate([d_projected[..., : 2 * hidden], dhn], -1), dh[0])


def _rnn_backward(grad, projected, h0, w_hh):
    out = recurrent.rnn_sequence(projected.detach(), h0.detach(), w_hh.detach())
    return recurrent.RNNSequenceBackward.apply(grad, out, projected, h0, w_hh, relu=False)


def _rnn_backward_reference(grad, projected, h0, w_hh):
    d_projected, dh = _streams(_recurrent_recompute.rnn_recurrence, grad, projected, h0, w_hh, extra=1)
    return _flat(d_projected, dh[0])


def _away_from_zero_relu_input(rng):
    """A relu RNN whose pre-activations stay clear of 0 (gradcheck steps over no kink)."""
    return (rng.uniform(0.5, 1.0, (L, N, H)) * rng.choice([-1.0, 1.0], (L, N, H)), rng.uniform(0.0, 0.1, (N, H)), rng.uniform(-0.1, 0.1, (H, H)))


CASES = [
    OpCase(
        "lstm_sequence", "3-steps", args(normal(L, N, 4 * H), normal(N, H), normal(N, H), normal(4 * H, H)),
        recurrent.lstm_sequence, lstm_reference, **CLOSE,
    ),
    OpCase(
        "gru_sequence", "3-steps-bias", args(normal(L, N, 3 * H), normal(N, H), normal(3 * H, H), normal(3 * H)),
        recurrent.gru_sequence, gru_reference, **CLOSE,
    ),
    OpCase(
        "gru_sequence", "no-bias", args(normal(L, N, 3 * H), normal(N, H), normal(3 * H, H)),
        recurrent.gru_sequence, lambda p, h0, w: gru_reference(p, h0, w, np.zeros(3 * H)), **CLOSE,
    ),
    OpCase(
        "rnn_sequence", "tanh", args(normal(L, N, H), normal(N, H), normal(H, H)),
        recurrent.rnn_sequence, lambda p, h0, w: rnn_reference(p, h0, w, False), **CLOSE,
    ),
    OpCase(
        "rnn_sequence", "relu", _away_from_zero_relu_input,
        lambda p, h0, w: recurrent.rnn_sequence(p, h0, w, relu=True),
        lambda p, h0, w: rnn_reference(p, h0, w, True), **CLOSE,
    ),
    OpCase(
        "lstm_sequence_backward", "3-steps",
        args(normal(L + 1, N, H), normal(L, N, 4 * H), normal(N, H), normal(N, H), normal(4 * H, H)),
        _lstm_backward, _lstm_backward_reference, second_order=False, **CLOSE,
    ),
    OpCase(
        "gru_sequence_backward", "3-steps",
        args(normal(L, N, H), normal(L, N, 3 * H), normal(N, H), normal(3 * H, H), normal(3 * H)),
        _gru_backward, _gru_backward_reference, second_order=False, **CLOSE,
    ),
    OpCase(
        "rnn_sequence_backward", "tanh",
        args(normal(L, N, H), normal(L, N, H), normal(N, H), normal(H, H)),
        _rnn_backward, _rnn_backward_reference, second_order=False, **CLOSE,
    ),
    # Five rows of batch and H = 4: the per-step products' blocks of 4 x 3 dot products run, with
    # one leftover row and (for 4H and H) one leftover column (numdiff.kernels._row_products).
    OpCase(
        "lstm_sequence", "blocked-products", args(normal(2, 5, 16), normal(5, 4), normal(5, 4), normal(16, 4)),
        recurrent.lstm_sequence, lstm_reference, **CLOSE,
    ),
    OpCase(
        "gru_sequence", "blocked-products", args(normal(2, 5, 12), normal(5, 4), normal(12, 4), normal(12)),
        recurrent.gru_sequence, gru_reference, **CLOSE,
    ),
    OpCase(
        "rnn_sequence", "blocked-products", args(normal(2, 5, 4), normal(5, 4), normal(4, 4)),
        recurrent.rnn_sequence, lambda p, h0, w: rnn_reference(p, h0, w, False), **CLOSE,
    ),
    OpCase(
        "lstm_sequence_backward", "blocked-products",
        args(normal(3, 5, 4), normal(2, 5, 16), normal(5, 4), normal(5, 4), normal(16, 4)),
        _lstm_backward, _lstm_backward_reference, second_order=False, **CLOSE,
    ),
    OpCase(
        "gru_sequence_backward", "blocked-products",
        args(normal(2, 5, 4), normal(2, 5, 12), normal(5, 4), normal(12, 4), normal(12)),
        _gru_backward, _gru_backward_reference, second_order=False, **CLOSE,
    ),
    OpCase(
        "rnn_sequence_backward", "blocked-products",
        args(normal(2, 5, 4), normal(2, 5, 4), normal(5, 4), normal(4, 4)),
        _rnn_backward, _rnn_backward_reference, second_order=False, **CLOSE,
    ),
]  # fmt: skip
