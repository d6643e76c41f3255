"""nn.LSTM with proj_size as one lstm_sequence op per layer and direction
(numdiff.nn.modules._rnn_projection): parity with torch 2.13 in float64 (outputs, final states and
every gradient, padded and packed), gradcheck and gradgradcheck, one op whatever the length, and
bad input to lstm_projected_sequence."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck, gradgradcheck
from numdiff.nn.modules import _rnn_projection as projection
from numdiff.nn.modules._rnn_projection import lstm_projected_sequence
from numdiff.nn.utils import rnn as packing
from tests.nn.parity64 import backward_both, close, compare_parameter_grads, leaf, load_from_torch
from tests.nn.test_rnn import _compare_run, _recorded_ops

torch = pytest.importorskip("torch")

PROJECTED = [
    {"proj_size": 2},
    {"proj_size": 3, "num_layers": 2, "bidirectional": True, "batch_first": True},
    {"proj_size": 1, "num_layers": 2, "bias": False},
]


def _pair(**kwargs):
    return load_from_torch(numdiff.nn.LSTM(3, 5, **kwargs).double(), torch.nn.LSTM(3, 5, **kwargs).double(), eval_mode=False)


@pytest.mark.parametrize("kwargs", PROJECTED, ids=["one", "bidirectional-stack", "no-bias-P1"])
def test_projected_lstm_matches_torch_outputs_states_and_gradients(rng, kwargs):
    ours, theirs = _pair(**kwargs)
    steps, batch = 6, 3
    shape = (batch, steps, 3) if kwargs.get("batch_first") else (steps, batch, 3)
    _compare_run(rng, "LSTM", ours, theirs, shape, (batch,))


def test_projected_lstm_records_one_sequence_op_per_layer_and_direction_whatever_its_length(rng):
    layer = numdiff.nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2).double()
    sizes = set()
    for steps in (2, 9):
        counts = _recorded_ops(layer(numdiff.tensor(rng.standard_normal((steps, 2, 3))))[0])
        assert counts["lstm_sequence"] == 4
        sizes.add(sum(counts.values()))
    assert len(sizes) == 1


def test_packed_projected_lstm_matches_torch(rng):
    ours, theirs = _pair(proj_size=2, bidirectional=True)
    x, x_t = leaf(rng.standard_normal((5, 3, 3)))
    h0, h0_t = leaf(rng.standard_normal((2, 3, 2)))
    c0, c0_t = leaf(rng.standard_normal((2, 3, 5)))
    lengths = [3, 5, 1]
    out, (h, c) = ours(packing.pack_padded_sequence(x, lengths, enforce_sorted=False), (h0, c0))
    out_t, (h_t, c_t) = theirs(torch.nn.utils.rnn.pack_padded_sequence(x_t, lengths, enforce_sorted=False), (h0_t, c0_t))
    assert _recorded_ops(out.data)["lstm_sequence"] == 2 * 3  # three runs of one batch size, two directions
    backward_both(rng, [out.data, h, c], [out_t.data, h_t, c_t])
    for mine, expected, what in [(out.data, out_t.data, "output"), (h, h_t, "h_n"), (c, c_t, "c_n"), (x.grad, x_t.grad, "grad of input"),
                                 (h0.grad, h0_t.grad, "grad of h_0"), (c0.grad, c0_t.grad, "grad of c_0")]:
        close(mine, expected, what)
    compare_parameter_grads(ours, theirs)


def test_gradcheck_and_gradgradcheck_through_a_projected_lstm(rng):
    layer = numdiff.nn.LSTM(2, 3, proj_size=2, bidirectional=True).double()
    x = numdiff.tensor(rng.standard_normal((3, 2, 2)), requires_grad=True)
    h0 = numdiff.tensor(rng.standard_normal((2, 2, 2)), requires_grad=True)
    c0 = numdiff.tensor(rng.standard_normal((2, 2, 3)), requires_grad=True)
    weights = [layer.weight_hh_l0, layer.weight_hr_l0, layer.weight_hr_l0_reverse, layer.bias_ih_l0]

    def run(x, h0, c0, *_):
        out, (h, c) = layer(x, (h0, c0))
        return out, h, c

    assert gradcheck(run, (x, h0, c0, *weights))
    assert gradgradcheck(run, (x, h0, c0, layer.weight_hr_l0))


def test_lstm_projected_sequence_matches_a_loop_of_steps_in_numpy(rng):
    steps, batch, hidden, proj = 4, 2, 3, 2
    values = [rng.standard_normal(s) for s in ((steps, batch, 4 * hidden), (batch, proj), (batch, hidden), (4 * hidden, proj), (proj, hidden))]
    h, c = lstm_projected_sequence(*(numdiff.tensor(v) for v in values))
    projected, h_t, c_t, w_hh, w_hr = values

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    for t in range(steps):
        i, f, g, o = np.split(projected[t] + h_t @ w_hh.T, 4, -1)
        c_t = sigmoid(f) * c_t + sigmoid(i) * np.tanh(g)
        h_t = (sigmoid(o) * np.tanh(c_t)) @ w_hr.T
        np.testing.assert_allclose(h[t].numpy(), h_t, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(c.numpy(), c_t, rtol=1e-12, atol=1e-14)


def test_lstm_projected_sequence_names_the_shapes_that_disagree():
    z = numdiff.zeros
    with pytest.raises(ValueError, match=r"lstm_projected_sequence: shapes disagree with w_hr \(P, H\) = \(2, 3\): h0 \(2, 3\) \(expected \(2, 2\)\)"):
        lstm_projected_sequence(z(4, 2, 12), z(2, 3), z(2, 3), z(12, 2), z(2, 3))
    with pytest.raises(ValueError, match=r"w_hh \(12, 3\) \(expected \(12, 2\)\)"):
        lstm_projected_sequence(z(4, 2, 12), z(2, 2), z(2, 3), z(12, 3), z(2, 3))
    with pytest.raises(ValueError, match=r"lstm_projected_sequence: w_hr \(P, H\) must have P < H, got \(3, 3\)"):
        lstm_projected_sequence(z(4, 2, 12), z(2, 3), z(2, 3), z(12, 3), z(3, 3))
    with pytest.raises(ValueError, match=r"expected projected \(L, N, 4H\).*'projected': \(2, 12\)"):
        lstm_projected_sequence(z(2, 12), z(2, 2), z(2, 3), z(12, 2), z(2, 3))
    with pytest.raises(TypeError, match="lstm_projected_sequence: w_hr must be a Tensor, got ndarray"):
        lstm_projected_sequence(z(4, 2, 12), z(2, 2), z(2, 3), z(12, 2), np.zeros((2, 3)))


def test_a_projection_too_costly_to_fuse_runs_step_by_step_and_still_matches_torch(rng, monkeypatch):
    monkeypatch.setattr(projection, "FUSED_MAX_EXTRA_MACS", 0)
    assert not projection.fuses_projection(1, 5, 2)
    ours, theirs = _pair(proj_size=2, bidirectional=True)
    x = numdiff.tensor(rng.standard_normal((4, 2, 3)))
    assert "lstm_sequence" not in _recorded_ops(ours(x)[0])
    _compare_run(rng, "LSTM", ours, theirs, (4, 2, 3), (2,))


def test_compiled_projected_lstm_matches_eager_and_its_graph_does_not_grow_with_the_length(rng):
    layer = numdiff.nn.LSTM(3, 5, proj_size=2, num_layers=2).double()

    def loss(x):
        out, (h, c) = layer(x)
        return out.square().sum() + h.sum() + c.sum()

    listings = []
    for steps in (3, 9):
        x = numdiff.tensor(rng.standard_normal((steps, 2, 3)))
        compiled = numdiff.compile(loss)
        expected, got = loss(x), compiled(x)
        np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-12)
        params = list(layer.parameters())
        for a, b in zip(numdiff.autograd.grad(got, params), numdiff.autograd.grad(expected, params)):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
        (trace,) = [t for traces in compiled.compiled.traces.values() for t in traces]
        calls = [call.op_name for call in trace.program.graph.calls]
        assert calls.count("lstm_sequence") == 2
        listings.append(calls)
    assert listings[0] == listings[1]
