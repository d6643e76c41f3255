"""The reverse direction flips the narrower of a layer's input and its projection (nn/modules/rnn.py
`_run_sequence_op`), and the final states of a layer-direction are slices of its sequence op's
output, joined without a stack: both sides of the flip, both layouts, one-step calls (a decoder fed
one token at a time with the state handed on) and multi-layer stacks against torch in float64
(outputs, final states and every gradient), central differences through h_n and c_n, bad states."""

from __future__ import annotations

import pytest

import numdiff
import numdiff.nn as nn
from numdiff.autograd import gradcheck
from tests.nn.parity64 import close, compare_parameter_grads, leaf
from tests.nn.test_rnn import _compare_run, _initial_state, _pair

torch = pytest.importorskip("torch")

# (layer, input size, hidden size, keyword arguments): input narrower than the gates (the input is
# flipped), wider (the projection is flipped), both in one stack, and layouts and lengths around them.
DIRECTIONS = [
    ("LSTM", 3, 4, {"bidirectional": True}),
    ("LSTM", 21, 4, {"bidirectional": True, "batch_first": True}),
    ("LSTM", 9, 2, {"bidirectional": True, "num_layers": 2}),
    ("GRU", 13, 4, {"bidirectional": True, "batch_first": True}),
    ("GRU", 5, 4, {"bidirectional": True, "num_layers": 3}),
    ("RNN", 6, 4, {"bidirectional": True}),
    ("RNN", 2, 4, {"bidirectional": True, "nonlinearity": "relu", "batch_first": True, "num_layers": 2}),
]


@pytest.mark.parametrize("cls_name, inputs, hidden, kwargs", DIRECTIONS, ids=[f"{c}{i}x{h}{k}" for c, i, h, k in DIRECTIONS])
@pytest.mark.parametrize("steps", [1, 6])
def test_reverse_direction_matches_torch_on_either_side_of_the_flip(rng, cls_name, inputs, hidden, kwargs, steps):
    ours, theirs = _pair(cls_name, inputs, hidden, **kwargs)
    batch = 3
    shape = (batch, steps, inputs) if kwargs.get("batch_first") else (steps, batch, inputs)
    _compare_run(rng, cls_name, ours, theirs, shape, (batch,))


@pytest.mark.parametrize("cls_name", ["LSTM", "GRU", "RNN"])
def test_one_step_calls_handing_the_state_on_match_torch(rng, cls_name):
    """A decoder's loop: nn.LSTM/GRU/RNN called on one step at a time, each call's final state the
    next call's initial state, the loss on every output and on the last state."""
    ours, theirs = _pair(cls_name, 5, 4, batch_first=True)
    leaves, state, state_t = _initial_state(rng, cls_name, ours, (2,))
    loss = loss_t = 0.0
    for step in range(4):
        x, x_t = leaf(rng.standard_normal((2, 1, 5)))
        out, state = ours(x, state)
        out_t, state_t = theirs(x_t, state_t)
        close(out, out_t, f"output of step {step}")
        loss = loss + (out * (step + 1)).sum()
        loss_t = loss_t + (out_t * (step + 1)).sum()
    finals = state if isinstance(state, tuple) else (state,)
    finals_t = state_t if isinstance(state_t, tuple) else (state_t,)
    for i, (mine, expected) in enumerate(zip(finals, finals_t)):
        assert tuple(mine.shape) == (1, 2, 4)
        close(mine, expected, f"final state {i}")
        loss = loss + (mine * mine).sum() * (i + 2)
        loss_t = loss_t + (expected * expected).sum() * (i + 2)
    loss.backward()
    loss_t.backward()
    for i, (mine, expected) in enumerate(leaves):
        close(mine.grad, expected.grad, f"grad of initial state {i}")
    compare_parameter_grads(ours, theirs)


@pytest.mark.parametrize("cls_name", ["LSTM", "GRU"])
def test_gradcheck_through_the_final_states_of_a_reversed_projection(rng, cls_name):
    """Input 9 against gates of 4 x 2 (LSTM) and 3 x 2 (GRU): the reverse direction flips the projection."""
    layer = getattr(nn, cls_name)(9, 2, bidirectional=True).double()
    x = numdiff.tensor(rng.standard_normal((3, 2, 9)), requires_grad=True)

    def finals(x, *_):
        _, state = layer(x)
        return state if isinstance(state, tuple) else (state,)

    assert gradcheck(finals, (x, layer.weight_ih_l0_reverse, layer.weight_hh_l0_reverse))


def test_a_bidirectional_state_with_one_direction_names_the_layer_and_the_shapes(rng):
    layer = nn.LSTM(3, 4, bidirectional=True, batch_first=True)
    h0 = numdiff.zeros(1, 2, 4)
    with pytest.raises(ValueError, match=r"LSTM.*h_0 of shape \(2, 2, 4\), got \(1, 2, 4\)"):
        layer(numdiff.zeros(2, 1, 3), (h0, h0))



@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_final_states_can_be_written_in_place_while_recording_as_in_torch(mode):
    """h_n (and c_n) are tensors of their own, as PyTorch's: zeroing a finished sequence's row of
    the state and scaling it in place before the next call records, and the gradient is PyTorch's."""
    import numpy as np

    theirs = getattr(torch.nn, mode)(3, 4).double()
    ours = getattr(nn, mode)(3, 4).double()
    ours.load_state_dict({k: numdiff.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    grads = []
    for lib, layer in ((numdiff, ours), (torch, theirs)):
        x = lib.tensor(np.linspace(-1.0, 1.0, 12).reshape(2, 2, 3), requires_grad=True)
        _, state = layer(x)
        h = state[0] if mode == "LSTM" else state
        h[:, 0] = 0.0
        h.mul_(2.0)
        out, _ = layer(x, (h, state[1]) if mode == "LSTM" else h)
        out.sum().backward()
        grads.append(np.asarray(x.grad.detach().numpy()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)
