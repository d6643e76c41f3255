"""RNN/LSTM/GRU on a PackedSequence by runs of one batch size (numdiff.nn.modules._rnn_packed):
the runs, parity with torch 2.13 over the layer family (modes, layers, directions, batch_first,
length patterns, float64 to 1e-10 and float32), a float64 gradcheck, one op per run, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck, gradgradcheck
from numdiff.nn.modules._rnn_packed import runs_of_batch_sizes
from numdiff.nn.utils import rnn as packing
from tests.nn.parity64 import backward_both, close, compare_parameter_grads, leaf, load_from_torch
from tests.nn.test_rnn import _recorded_ops

torch = pytest.importorskip("torch")
torch_packing = torch.nn.utils.rnn


@pytest.mark.parametrize(
    "sizes, runs",
    [
        ([4], [(0, 1, 4)]),
        ([2, 2, 2], [(0, 3, 2)]),
        ([3, 2, 1], [(0, 1, 3), (3, 1, 2), (5, 1, 1)]),
        ([5, 5, 3, 3, 3, 1], [(0, 2, 5), (10, 3, 3), (19, 1, 1)]),
    ],
)
def test_runs_cover_the_packed_rows_in_time_order(sizes, runs):
    assert runs_of_batch_sizes(np.array(sizes)) == runs
    first, steps, rows = runs[-1]
    assert first + steps * rows == sum(sizes)


LENGTHS = {"distinct": [2, 6, 1, 4, 5], "equal": [3, 3, 3], "one_long": [1, 1, 7, 1], "single": [4]}
FAMILY = [
    ("LSTM", {}),
    ("LSTM", {"num_layers": 3, "bidirectional": True}),
    ("GRU", {"num_layers": 2, "batch_first": True}),
    ("GRU", {"bidirectional": True}),
    ("RNN", {"nonlinearity": "tanh", "bidirectional": True, "batch_first": True}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
]


def _run_both(rng, cls_name, kwargs, lengths, dtype, with_state):
    def build(lib):
        return getattr(lib.nn, cls_name)(3, 4, **kwargs).to(getattr(lib, dtype))

    ours, theirs = load_from_torch(build(numdiff), build(torch), eval_mode=False)
    batch_first = kwargs.get("batch_first", False)
    batch, steps = len(lengths), max(lengths)
    x, x_t = leaf(rng.standard_normal((batch, steps, 3) if batch_first else (steps, batch, 3)).astype(dtype))
    count = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    states = [leaf(rng.standard_normal((count, batch, 4)).astype(dtype)) for _ in range(2 if cls_name == "LSTM" else 1)]
    hx = (tuple(s[0] for s in states) if cls_name == "LSTM" else states[0][0]) if with_state else None
    hx_t = (tuple(s[1] for s in states) if cls_name == "LSTM" else states[0][1]) if with_state else None
    packed = packing.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=False)
    packed_t = torch_packing.pack_padded_sequence(x_t, lengths, batch_first=batch_first, enforce_sorted=False)
    out, final = ours(packed, hx)
    out_t, final_t = theirs(packed_t, hx_t)
    finals = list(final) if isinstance(final, tuple) else [final]
    finals_t = list(final_t) if isinstance(final_t, tuple) else [final_t]
    backward_both(rng, [out.data, *finals], [out_t.data, *finals_t])
    pairs = [(out.data, out_t.data, "packed output"), (x.grad, x_t.grad, "grad of input")]
    pairs += [(mine, expected, f"final state {i}") for i, (mine, expected) in enumerate(zip(finals, finals_t))]
    if with_state:
        pairs += [(mine.grad, expected.grad, f"grad of initial state {i}") for i, (mine, expected) in enumerate(states)]
    return ours, theirs, pairs


@pytest.mark.parametrize("cls_name, kwargs", FAMILY, ids=[f"{c}-{i}" for i, (c, _) in enumerate(FAMILY)])
@pytest.mark.parametrize("pattern", list(LENGTHS))
def test_packed_layers_match_torch_in_float64(rng, cls_name, kwargs, pattern):
    ours, theirs, pairs = _run_both(rng, cls_name, kwargs, LENGTHS[pattern], "float64", with_state=pattern != "equal")
    for mine, expected, what in pairs:
        close(mine, expected, what)
    compare_parameter_grads(ours, theirs)


@pytest.mark.parametrize("cls_name, kwargs", FAMILY[1::2], ids=["LSTM", "GRU", "RNN"])
def test_packed_layers_match_torch_in_float32(rng, cls_name, kwargs):
    ours, theirs, pairs = _run_both(rng, cls_name, kwargs, LENGTHS["distinct"], "float32", with_state=True)
    for mine, expected, what in pairs:
        np.testing.assert_allclose(mine.detach().numpy(), expected.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=what)
    for (name, p), p_t in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), p_t.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("cls_name", ["RNN", "LSTM", "GRU"])
def test_gradcheck_and_gradgradcheck_through_a_bidirectional_packed_stack(rng, cls_name):
    layer = getattr(numdiff.nn, cls_name)(2, 2, num_layers=2, bidirectional=True).double()
    x = numdiff.tensor(rng.standard_normal((3, 3, 2)), requires_grad=True)
    weights = [layer.weight_ih_l0, layer.weight_hh_l0, layer.weight_hh_l1_reverse, layer.bias_hh_l0_reverse]

    def run(x, *_):
        out, state = layer(packing.pack_padded_sequence(x, [2, 3, 1], enforce_sorted=False))
        return out.data, state[1] if isinstance(state, tuple) else state

    assert gradcheck(run, (x, *weights))
    assert gradgradcheck(run, (x, layer.weight_hh_l0_reverse))


def test_a_packed_layer_records_one_sequence_op_per_run_and_direction(rng):
    layer = numdiff.nn.GRU(3, 4, bidirectional=True).double()
    x = numdiff.tensor(rng.standard_normal((6, 4, 3)), requires_grad=True)
    packed = packing.pack_padded_sequence(x, [6, 6, 2, 1])  # batch sizes 4, 3, 2, 2, 2, 2
    assert len(runs_of_batch_sizes(packed.batch_sizes.numpy())) == 3
    out, _ = layer(packed)
    assert _recorded_ops(out.data)["gru_sequence"] == 2 * 3


def test_packed_data_of_the_wrong_width_names_the_layer_and_the_shape():
    layer = numdiff.nn.LSTM(3, 4)
    packed = packing.pack_padded_sequence(numdiff.zeros(4, 2, 5), [4, 2])
    with pytest.raises(ValueError, match=r"LSTM.*\(sum of lengths, 3\), got \(6, 5\)"):
        layer(packed)
