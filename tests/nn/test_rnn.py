"""Recurrent layers against torch 2.13 in float64: torch's state_dict loads, outputs, final states and
every gradient agree to 1e-10; gradcheck/gradgradcheck on tiny sizes; bad input names the layer."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.autograd import gradcheck, gradgradcheck
from tests.nn.parity64 import close, compare_parameter_grads, leaf, load_from_torch

torch = pytest.importorskip("torch")


SEQUENCE_LAYERS = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bias": False}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {"proj_size": 2}),
    ("GRU", {"num_layers": 2, "bidirectional": True}),
    ("GRU", {"batch_first": True, "bias": False}),
]


def _pair(cls_name, *args, **kwargs):
    """A torch layer and a numdiff layer loaded from torch's state_dict (float64)."""
    theirs = getattr(torch.nn, cls_name)(*args, **kwargs).double()
    return load_from_torch(getattr(nn, cls_name)(*args, **kwargs).double(), theirs, eval_mode=False)


def _initial_state(rng, cls_name, layer, batch_shape):
    count = layer.num_layers * (2 if layer.bidirectional else 1)
    out_size = layer.proj_size or layer.hidden_size
    h0 = leaf(rng.standard_normal((count, *batch_shape, out_size)))
    if cls_name != "LSTM":
        return [h0], h0[0], h0[1]
    c0 = leaf(rng.standard_normal((count, *batch_shape, layer.hidden_size)))
    return [h0, c0], (h0[0], c0[0]), (h0[1], c0[1])


def _compare_run(rng, cls_name, ours, theirs, input_shape, batch_shape):
    x, x_t = leaf(rng.standard_normal(input_shape))
    leaves, hx, hx_t = _initial_state(rng, cls_name, ours, batch_shape)
    out, state = ours(x, hx)
    out_t, state_t = theirs(x_t, hx_t)
    close(out, out_t, "output")
    finals = state if isinstance(state, tuple) else (state,)
    finals_t = state_t if isinstance(state_t, tuple) else (state_t,)
    for i, (mine, expected) in enumerate(zip(finals, finals_t)):
        close(mine, expected, f"final state {i}")
    # A loss touching the output and every final state, with distinct weights per element.
    weights = [rng.standard_normal(tuple(t.shape)) for t in (out, *finals)]
    loss = sum((t * numdiff.tensor(w)).sum() for t, w in zip((out, *finals), weights))
    loss_t = sum((t * torch.tensor(w)).sum() for t, w in zip((out_t, *finals_t), weights))
    loss.backward()
    loss_t.backward()
    close(x.grad, x_t.grad, "grad of input")
    for i, (mine, expected) in enumerate(leaves):
        close(mine.grad, expected.grad, f"grad of initial state {i}")
    compare_parameter_grads(ours, theirs)


@pytest.mark.parametrize("cls_name, kwargs", SEQUENCE_LAYERS, ids=[f"{c}{k}" for c, k in SEQUENCE_LAYERS])
def test_sequence_layer_matches_torch_state_dict_outputs_states_and_gradients(rng, cls_name, kwargs):
    ours, theirs = _pair(cls_name, 3, 4, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    seq, batch = 5, 2
    shape = (batch, seq, 3) if kwargs.get("batch_first") else (seq, batch, 3)
    _compare_run(rng, cls_name, ours, theirs, shape, (batch,))


@pytest.mark.parametrize("cls_name", ["RNN", "LSTM", "GRU"])
def test_unbatched_sequence_matches_torch(rng, cls_name):
    ours, theirs = _pair(cls_name, 3, 4, num_layers=2, bidirectional=True)
    _compare_run(rng, cls_name, ours, theirs, (5, 3), ())


@pytest.mark.parametrize("cls_name", ["RNN", "LSTM", "GRU"])
def test_zero_initial_state_is_the_default(rng, cls_name):
    ours, theirs = _pair(cls_name, 3, 4, batch_first=True)
    x = rng.standard_normal((2, 4, 3))
    out, _ = ours(numdiff.tensor(x))
    close(out, theirs(torch.tensor(x))[0], "output without hx")


CELLS = [
    ("RNNCell", {}),
    ("RNNCell", {"nonlinearity": "relu", "bias": False}),
    ("LSTMCell", {}),
    ("GRUCell", {}),
    ("GRUCell", {"bias": False}),
]


@pytest.mark.parametrize("cls_name, kwargs", CELLS, ids=[f"{c}{k}" for c, k in CELLS])
@pytest.mark.parametrize("batch_shape", [(3,), ()], ids=["batched", "unbatched"])
def test_cell_matches_torch(rng, cls_name, kwargs, batch_shape):
    ours, theirs = _pair(cls_name, 3, 4, **kwargs)
    assert repr(ours) == repr(theirs)
    x, x_t = leaf(rng.standard_normal((*batch_shape, 3)))
    h, h_t = leaf(rng.standard_normal((*batch_shape, 4)))
    leaves = [(h, h_t)]
    if cls_name == "LSTMCell":
        c, c_t = leaf(rng.standard_normal((*batch_shape, 4)))
        leaves.append((c, c_t))
        out, out_t = ours(x, (h, c)), theirs(x_t, (h_t, c_t))
    else:
        out, out_t = (ours(x, h),), (theirs(x_t, h_t),)
    seeds = [rng.standard_normal(tuple(o.shape)) for o in out]
    sum((o * numdiff.tensor(s)).sum() for o, s in zip(out, seeds)).backward()
    sum((o * torch.tensor(s)).sum() for o, s in zip(out_t, seeds)).backward()
    for i, (mine, expected) in enumerate(zip(out, out_t)):
        close(mine, expected, f"output {i}")
    for i, (mine, expected) in enumerate([(x, x_t), *leaves]):
        close(mine.grad, expected.grad, f"grad of input {i}")
    compare_parameter_grads(ours, theirs)
    no_state = ours(x)
    close(no_state[0] if cls_name == "LSTMCell" else no_state, (theirs(x_t)[0] if cls_name == "LSTMCell" else theirs(x_t)), "no hx")


@pytest.mark.parametrize("cls_name", ["RNN", "LSTM", "GRU"])
def test_parameters_are_uniform_within_one_over_sqrt_hidden(cls_name):
    layer = getattr(nn, cls_name)(3, 16, num_layers=2)
    values = np.concatenate([p.detach().numpy().ravel() for p in layer.parameters()])
    assert np.abs(values).max() <= 0.25 and np.abs(values).max() > 0.2 and abs(values.mean()) < 0.05


def test_dropout_acts_between_layers_only_in_training(rng):
    ours, theirs = _pair("LSTM", 3, 4, num_layers=2, dropout=0.5)
    x = rng.standard_normal((5, 2, 3))
    numdiff.manual_seed(0)
    trained = ours(numdiff.tensor(x))[0].detach().numpy()
    numdiff.manual_seed(1)
    assert not np.allclose(trained, ours(numdiff.tensor(x))[0].detach().numpy())
    ours.eval()
    theirs.eval()
    close(ours(numdiff.tensor(x))[0], theirs(torch.tensor(x))[0], "eval output")
    # dropout=1 zeroes the whole second-layer input: the output is the second layer run on zeros.
    full = nn.GRU(3, 4, num_layers=2, dropout=1.0).double()
    second = nn.GRU(4, 4).double()
    second.load_state_dict({k.replace("_l1", "_l0"): v for k, v in full.state_dict().items() if "_l1" in k})
    np.testing.assert_allclose(full(numdiff.tensor(x))[0].detach().numpy(), second(numdiff.zeros(5, 2, 4, dtype=numdiff.float64))[0].detach().numpy())


@pytest.mark.parametrize("cls_name", ["RNN", "LSTM", "GRU"])
def test_gradcheck_and_gradgradcheck_on_a_tiny_bidirectional_stack(rng, cls_name):
    layer = getattr(nn, cls_name)(2, 2, num_layers=2, bidirectional=True).double()
    x = numdiff.tensor(rng.standard_normal((2, 1, 2)), requires_grad=True)
    weights = [layer.weight_ih_l0, layer.weight_hh_l1_reverse, layer.bias_hh_l0]

    def run(x, *_):
        out, state = layer(x)
        return out, state[1] if isinstance(state, tuple) else state

    assert gradcheck(run, (x, *weights))
    assert gradgradcheck(run, (x, layer.weight_hh_l0))


@pytest.mark.parametrize("cls_name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell_gradgradcheck(rng, cls_name):
    cell = getattr(nn, cls_name)(2, 2).double()
    x = numdiff.tensor(rng.standard_normal((1, 2)), requires_grad=True)
    assert gradgradcheck(lambda x, w: cell(x), (x, cell.weight_hh))


BAD_INPUTS = [
    ("LSTM", (4, 2, 5), None, ValueError, r"LSTM\(3, 4\): input.size\(-1\) must be equal to input_size. Expected 3, got 5"),
    ("GRU", (4,), None, ValueError, r"GRU\(3, 4\): expected input of shape \(L, N, H_in\) or \(L, H_in\) for unbatched, got \(4,\)"),
    ("RNN", (4, 2, 3), (1, 3, 4), ValueError, r"RNN\(3, 4\): expected hx of shape \(1, 2, 4\), got \(1, 3, 4\)"),
    ("RNN", (4, 3), (1, 2, 4), ValueError, r"RNN\(3, 4\): for unbatched 2-D input, hx should be 2-D with shape \(1, 4\), got shape \(1, 2, 4\)"),
    ("LSTM", (4, 2, 3), (1, 2, 4), TypeError, r"LSTM\(3, 4\): hx must be a tuple \(h_0, c_0\), got Tensor"),
]


@pytest.mark.parametrize("cls_name, shape, h_shape, error, message", BAD_INPUTS)
def test_bad_input_names_the_layer_and_the_shapes(cls_name, shape, h_shape, error, message):
    layer = getattr(nn, cls_name)(3, 4).double()
    hx = None if h_shape is None else numdiff.zeros(*h_shape, dtype=numdiff.float64)
    with pytest.raises(error, match=message):
        layer(numdiff.zeros(*shape, dtype=numdiff.float64), hx)


def test_bad_state_shapes_and_dtypes_are_refused():
    lstm = nn.LSTM(3, 4, num_layers=2)
    x = numdiff.zeros(5, 2, 3)
    with pytest.raises(ValueError, match=r"LSTM\(3, 4, num_layers=2\): expected c_0 of shape \(2, 2, 4\), got \(1, 2, 4\)"):
        lstm(x, (numdiff.zeros(2, 2, 4), numdiff.zeros(1, 2, 4)))
    with pytest.raises(TypeError, match="input and h_0 must have the same dtype"):
        lstm(x, (numdiff.zeros(2, 2, 4, dtype=numdiff.float64), numdiff.zeros(2, 2, 4)))
    with pytest.raises(TypeError, match=r"GRU\(3, 4\): input is numdiff.float64 but the layer's weights are numdiff.float32"):
        nn.GRU(3, 4)(numdiff.zeros(5, 2, 3, dtype=numdiff.float64))
    with pytest.raises(TypeError, match="floating point input"):
        nn.GRU(3, 4)(numdiff.zeros(5, 2, 3, dtype=numdiff.int64))
    with pytest.raises(ValueError, match=r"GRUCell\(3, 4\): expected hx of shape \(2, 4\) for input of shape \(2, 3\), got \(3, 4\)"):
        nn.GRUCell(3, 4)(numdiff.zeros(2, 3), numdiff.zeros(3, 4))
    with pytest.raises(ValueError, match=r"LSTMCell\(3, 4\): expected input of shape \(N, 3\) or \(3,\), got \(2, 5\)"):
        nn.LSTMCell(3, 4)(numdiff.zeros(2, 5))


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="RNN: unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="GRU: proj_size must be 0"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="LSTM: dropout should be a number in range"):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.warns(UserWarning, match="does nothing with num_layers=1"):
        nn.LSTM(3, 4, dropout=0.2)


def _recorded_ops(output):
    """The op names of every node the output's graph holds, with their counts."""
    counts, seen, stack = {}, set(), [output.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        name = getattr(getattr(node, "function", None), "op_name", None)
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
        stack.extend(getattr(node, "next_nodes", ()))
    return counts


@pytest.mark.parametrize("cls_name, op", [("LSTM", "lstm_sequence"), ("GRU", "gru_sequence"), ("RNN", "rnn_sequence")])
def test_a_sequence_records_one_op_per_layer_and_direction_whatever_its_length(rng, cls_name, op):
    layer = getattr(nn, cls_name)(3, 4, num_layers=2, bidirectional=True).double()
    sizes = set()
    for steps in (2, 9):
        output = layer(numdiff.tensor(rng.standard_normal((steps, 2, 3))))[0]
        counts = _recorded_ops(output)
        assert counts[op] == 4  # 2 layers x 2 directions
        sizes.add(sum(counts.values()))
    assert len(sizes) == 1  # the graph's size does not grow with the sequence


def test_compiled_lstm_matches_eager_with_one_sequence_call_whatever_the_length(rng):
    layer = nn.LSTM(3, 4).double()

    def loss(x):
        return layer(x)[0].square().sum()

    listings = []
    for steps in (3, 12):
        x = numdiff.tensor(rng.standard_normal((steps, 2, 3)))
        compiled = numdiff.compile(loss)
        expected = loss(x)
        got = compiled(x)
        np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-12)
        eager_grads = numdiff.autograd.grad(expected, list(layer.parameters()))
        compiled_grads = numdiff.autograd.grad(got, list(layer.parameters()))
        for a, b in zip(compiled_grads, eager_grads):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
        (trace,) = [t for traces in compiled.compiled.traces.values() for t in traces]
        calls = [call.op_name for call in trace.program.graph.calls]
        assert calls.count("lstm_sequence") == 1
        listings.append(calls)
    assert listings[0] == listings[1]  # the traced graph does not grow with the sequence


def test_sequence_op_refuses_mismatched_shapes_and_dtypes():
    from numdiff.ops.recurrent import gru_sequence, lstm_sequence

    z = numdiff.zeros
    with pytest.raises(ValueError, match=r"lstm_sequence: h0 must have shape \(2, 3\), got \(2, 4\)"):
        lstm_sequence(z(5, 2, 12), z(2, 4), z(2, 3), z(12, 3))
    with pytest.raises(ValueError, match=r"gru_sequence: w_hh must have shape \(9, 3\)"):
        gru_sequence(z(5, 2, 9), z(2, 3), z(9, 4))
    with pytest.raises(TypeError, match="gru_sequence: expected float32 or float64 tensors of one dtype"):
        gru_sequence(z(5, 2, 9), z(2, 3, dtype=numdiff.float64), z(9, 3))
    with pytest.raises(ValueError, match="lstm_sequence: expected a sequence of length >= 1"):
        lstm_sequence(z(0, 2, 12), z(2, 3), z(2, 3), z(12, 3))
