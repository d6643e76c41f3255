"""Packed sequences against torch 2.13: pack/pad round trips, pad_sequence, and RNN/LSTM/GRU on a
PackedSequence (unsorted lengths, initial states, bidirectional) with every gradient to 1e-10."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.autograd import gradcheck
from numdiff.nn.utils import rnn as packing
from tests.nn.parity64 import backward_both, close, compare_parameter_grads, leaf, load_from_torch

torch = pytest.importorskip("torch")
torch_packing = torch.nn.utils.rnn

LAYERS = [
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("GRU", {"bidirectional": True, "batch_first": True}),
    ("RNN", {"nonlinearity": "relu"}),
]


@pytest.mark.parametrize("cls_name, kwargs", LAYERS, ids=[c for c, _ in LAYERS])
@pytest.mark.parametrize("enforce_sorted", [False, True], ids=["unsorted", "sorted"])
def test_layer_on_packed_sequence_matches_torch(rng, cls_name, kwargs, enforce_sorted):
    def build(lib):
        return getattr(lib.nn, cls_name)(3, 4, **kwargs).double()

    ours, theirs = load_from_torch(build(numdiff), build(torch), eval_mode=False)
    batch_first = kwargs.get("batch_first", False)
    lengths = [5, 2, 1] if enforce_sorted else [2, 5, 1]
    x, x_t = leaf(rng.standard_normal((3, 5, 3) if batch_first else (5, 3, 3)))
    count = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    states = [leaf(rng.standard_normal((count, 3, 4))) for _ in range(2 if cls_name == "LSTM" else 1)]
    hx = tuple(s[0] for s in states) if cls_name == "LSTM" else states[0][0]
    hx_t = tuple(s[1] for s in states) if cls_name == "LSTM" else states[0][1]
    packed = packing.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    packed_t = torch_packing.pack_padded_sequence(x_t, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    assert packed.batch_sizes.tolist() == packed_t.batch_sizes.tolist()
    out, final = ours(packed, hx)
    out_t, final_t = theirs(packed_t, hx_t)
    assert isinstance(out, packing.PackedSequence)
    padded, out_lengths = packing.pad_packed_sequence(out, batch_first=batch_first, total_length=6)
    padded_t, out_lengths_t = torch_packing.pad_packed_sequence(out_t, batch_first=batch_first, total_length=6)
    assert out_lengths.tolist() == out_lengths_t.tolist() == lengths
    finals = list(final) if isinstance(final, tuple) else [final]
    finals_t = list(final_t) if isinstance(final_t, tuple) else [final_t]
    close(padded, padded_t, "padded output")
    for i, (mine, expected) in enumerate(zip(finals, finals_t)):
        close(mine, expected, f"final state {i}")
    backward_both(rng, [padded, *finals], [padded_t, *finals_t])
    close(x.grad, x_t.grad, "grad of input")
    for i, (mine, expected) in enumerate(states):
        close(mine.grad, expected.grad, f"grad of initial state {i}")
    compare_parameter_grads(ours, theirs)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch(rng, batch_first, padding_side):
    arrays = [rng.standard_normal((n, 2)) for n in (3, 1, 2)]
    ours = packing.pad_sequence([numdiff.tensor(a) for a in arrays], batch_first, -1.0, padding_side)
    theirs = torch_packing.pad_sequence([torch.tensor(a) for a in arrays], batch_first, -1.0, padding_side)
    close(ours, theirs, "padded")


def test_pack_sequence_round_trip_and_gradient(rng):
    arrays = [rng.standard_normal((n, 2)) for n in (1, 3, 2)]
    tensors = [numdiff.tensor(a, requires_grad=True) for a in arrays]
    packed = packing.pack_sequence(tensors, enforce_sorted=False)
    packed_t = torch_packing.pack_sequence([torch.tensor(a) for a in arrays], enforce_sorted=False)
    close(packed.data, packed_t.data, "packed data")
    assert packed.sorted_indices.tolist() == packed_t.sorted_indices.tolist()
    padded, lengths = packing.pad_packed_sequence(packed, batch_first=True)
    assert lengths.tolist() == [1, 3, 2]
    for i, a in enumerate(arrays):
        np.testing.assert_array_equal(padded.detach().numpy()[i, : len(a)], a)
    assert gradcheck(lambda a, b, c: packing.pack_sequence([a, b, c], enforce_sorted=False).data, tuple(tensors))


def test_packing_refuses_bad_lengths():
    x = numdiff.zeros(4, 3, 2)
    with pytest.raises(ValueError, match=r"lengths must be sorted in decreasing order when enforce_sorted=True, got \[2, 4, 1\]"):
        packing.pack_padded_sequence(x, [2, 4, 1])
    with pytest.raises(ValueError, match=r"every length must be greater than 0, got \[0, 4, 1\]"):
        packing.pack_padded_sequence(x, [0, 4, 1], enforce_sorted=False)
    with pytest.raises(RuntimeError, match="enforce_sorted"):  # PyTorch's class too: code catches either
        packing.pack_padded_sequence(x, [2, 4, 1])
    with pytest.raises(RuntimeError, match="greater than 0"):
        packing.pack_padded_sequence(x, [0, 4, 1], enforce_sorted=False)
    with pytest.raises(ValueError, match="expected 3 lengths"):
        packing.pack_padded_sequence(x, [4, 1])
    with pytest.raises(ValueError, match="a length of 5 exceeds the 4 time steps"):
        packing.pack_padded_sequence(x, [5, 4, 1])
    with pytest.raises(ValueError, match=r"LSTM\(3, 4\): expected PackedSequence data of shape \(sum of lengths, 3\), got \(7, 2\)"):
        nn.LSTM(3, 4)(packing.pack_padded_sequence(x, [4, 2, 1]))


@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_and_unpack_sequence_match_torch_and_carry_gradients(rng, batch_first):
    arrays = [rng.standard_normal((n, 2)) for n in (3, 1, 4)]
    lengths = [3, 1, 4]
    padded = packing.pad_sequence([numdiff.tensor(a) for a in arrays], batch_first)
    padded_t = torch_packing.pad_sequence([torch.tensor(a) for a in arrays], batch_first)
    ours = packing.unpad_sequence(padded, numdiff.tensor(lengths), batch_first=batch_first)
    theirs = torch_packing.unpad_sequence(padded_t, torch.tensor(lengths), batch_first=batch_first)
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs):
        close(a, b, "unpadded")
    packed = packing.pack_sequence([numdiff.tensor(a) for a in arrays], enforce_sorted=False)
    for a, b in zip(packing.unpack_sequence(packed), arrays):
        np.testing.assert_array_equal(a.numpy(), b)
    x = numdiff.tensor(rng.standard_normal((3, 4, 2) if batch_first else (4, 3, 2)), requires_grad=True)
    assert gradcheck(lambda t: numdiff.cat(packing.unpad_sequence(t, lengths, batch_first), 0), (x,))
    assert gradcheck(lambda t: numdiff.cat(packing.unpack_sequence(
        packing.pack_padded_sequence(t, lengths, batch_first, enforce_sorted=False)), 0), (x,))


def test_unpad_and_unpack_refuse_bad_arguments_naming_the_values():
    x = numdiff.zeros(4, 3, 2)
    with pytest.raises(ValueError, match=r"unpad_sequence: expected 3 lengths \(one per sequence in the batch\), got 2"):
        packing.unpad_sequence(x, [4, 1])
    with pytest.raises(ValueError, match=r"unpad_sequence: every length must be between 0 and the padded length 4, got \[5, 1, 1\]"):
        packing.unpad_sequence(x, [5, 1, 1])
    with pytest.raises(TypeError, match=r"unpad_sequence: lengths must be a 1-D sequence of integers"):
        packing.unpad_sequence(x, [1.5, 1, 1])
    with pytest.raises(TypeError, match=r"unpack_sequence: expected a PackedSequence, got Tensor"):
        packing.unpack_sequence(x)


def test_packed_sequence_to_converts_data_and_keeps_the_order():
    x = numdiff.tensor(np.arange(12.0).reshape(3, 4, 1), dtype=numdiff.float32)
    packed = packing.pack_padded_sequence(x, [1, 3, 2], batch_first=True, enforce_sorted=False)
    assert packed.to(numdiff.float32) is packed and packed.cpu() is packed
    doubled = packed.to(numdiff.float64)
    assert isinstance(doubled, packing.PackedSequence) and doubled.data.dtype == numdiff.float64
    assert doubled.sorted_indices.tolist() == [1, 2, 0] and doubled.batch_sizes.tolist() == [3, 2, 1]
    assert packed.double().data.dtype == numdiff.float64 and packed.half().float().data.dtype == numdiff.float32
    assert not packed.is_cuda
    output, _ = nn.GRU(1, 2).double()(doubled)
    assert output.data.dtype == numdiff.float64
