"""The LSTM and GRU sequence ops hand on only what a layer returns (h_1 .. h_L, and LSTM's c_L), so
the gradient their backward receives is that size, not the size of the kernels' (L, N, 5H) records
of every gate, which a slice of the output used to fill with zeros each step. Checked for the
layer shapes the models use and others (layers, directions, batch_first, lengths), eager and
compiled, float32 and float64."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.ops.recurrent import gru_sequence, lstm_sequence

torch = pytest.importorskip("torch")


def _sequence_nodes(output, op_name):
    """The nodes of `op_name` in the output's graph."""
    found, seen, stack = [], set(), [output.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if getattr(getattr(node, "function", None), "op_name", None) == op_name:
            found.append(node)
        stack.extend(getattr(node, "next_nodes", ()))
    return found


@pytest.mark.parametrize(
    "cls_name, op_name, kwargs, steps, batch",
    [
        ("LSTM", "lstm_sequence", {}, 7, 3),
        ("LSTM", "lstm_sequence", {"num_layers": 2, "bidirectional": True, "batch_first": True}, 4, 5),
        ("GRU", "gru_sequence", {}, 6, 2),
        ("GRU", "gru_sequence", {"num_layers": 2, "bidirectional": True}, 3, 4),
    ],
)
def test_the_sequence_op_backward_receives_only_the_hidden_states_gradient(cls_name, op_name, kwargs, steps, batch):
    hidden = 5
    layer = getattr(nn, cls_name)(3, hidden, **kwargs)
    shape = (batch, steps, 3) if kwargs.get("batch_first") else (steps, batch, 3)
    output, _ = layer(numdiff.randn(*shape))
    nodes = _sequence_nodes(output, op_name)
    assert len(nodes) == layer.num_layers * (2 if layer.bidirectional else 1)
    received = []
    for node in nodes:
        node.register_prehook(lambda grads: received.append(tuple(grads[0].shape)))
    output.square().sum().backward()
    rows = steps + 1 if cls_name == "LSTM" else steps  # LSTM's last row is c_L
    assert received == [(rows, batch, hidden)] * len(nodes)


def test_lstm_sequence_returns_the_hidden_states_then_the_last_cell_state():
    rng = np.random.default_rng(3)
    projected, h0, c0, w_hh = (rng.standard_normal(s) for s in ((4, 2, 12), (2, 3), (2, 3), (12, 3)))
    out = lstm_sequence(*(numdiff.tensor(a) for a in (projected, h0, c0, w_hh)))
    assert tuple(out.shape) == (5, 2, 3)
    h, c, hs = torch.tensor(h0), torch.tensor(c0), []
    for t in range(4):
        i, f, g, o = (torch.tensor(projected[t]) + h @ torch.tensor(w_hh).T).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        hs.append(h)
    np.testing.assert_allclose(out[:-1].numpy(), torch.stack(hs).numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[-1].numpy(), c.numpy(), rtol=1e-12, atol=1e-12)


def test_gru_sequence_returns_the_hidden_states():
    out = gru_sequence(numdiff.zeros(5, 2, 9), numdiff.zeros(2, 3), numdiff.zeros(9, 3))
    assert tuple(out.shape) == (5, 2, 3)


@pytest.mark.parametrize("cls_name", ["LSTM", "GRU"])
def test_compiled_layer_trains_as_eager_with_the_last_states_in_the_loss(cls_name):
    """Three Adam steps of a 2-layer bidirectional layer whose loss reads the output, h_n and (LSTM)
    c_n: the compiled step's losses and weights equal eager's (float64)."""
    numdiff.manual_seed(0)
    layers = [getattr(nn, cls_name)(4, 6, num_layers=2, bidirectional=True).double() for _ in range(2)]
    layers[1].load_state_dict(layers[0].state_dict())
    x = numdiff.randn(9, 3, 4, dtype=numdiff.float64)

    def loss_of(layer):
        def loss(x):
            output, state = layer(x)
            finals = state if isinstance(state, tuple) else (state,)
            return output.square().mean() + sum(f.sin().sum() for f in finals)

        return loss

    steps = [loss_of(layers[0]), numdiff.compile(loss_of(layers[1]))]
    optimizers = [numdiff.optim.Adam(layer.parameters(), lr=0.01) for layer in layers]
    for _ in range(3):
        losses = []
        for step, optimizer in zip(steps, optimizers):
            optimizer.zero_grad()
            loss = step(x)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-12)
    for a, b in zip(layers[0].parameters(), layers[1].parameters()):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-11, atol=1e-13)
