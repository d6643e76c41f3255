"""The sequence ops' first-order backward (numdiff.ops.recurrent: kernel and weight GEMM on arrays,
no op recorded) against the recorded backward that create_graph runs (the registered backward op,
views and a matmul): the same kernels on the same operands, so the same bits, for every family,
one step (a cell's step) and several, with and without GRU's b_hh, and inputs that need no grad."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import grad as autograd_grad
from numdiff.ops import recurrent

GATES = {"lstm": 4, "gru": 3, "rnn": 1, "rnn_relu": 1}


def _inputs(family: str, steps: int, batch: int, hidden: int, dtype: str, bias: bool) -> list:
    rng = np.random.default_rng(steps * 100 + hidden)
    width = GATES[family] * hidden

    def leaf(*shape: int):
        return numdiff.tensor(rng.standard_normal(shape) * 0.5, dtype=getattr(numdiff, dtype), requires_grad=True)

    tensors = [leaf(steps, batch, width), leaf(batch, hidden)]
    if family == "lstm":
        tensors.append(leaf(batch, hidden))
    tensors.append(leaf(width, hidden))
    if family == "gru" and bias:
        tensors.append(leaf(width))
    return tensors


def _run(family: str, tensors: list):
    if family == "lstm":
        return recurrent.lstm_sequence(*tensors)
    if family == "gru":
        return recurrent.gru_sequence(*tensors)
    return recurrent.rnn_sequence(*tensors, relu=family == "rnn_relu")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("steps", [1, 4])
@pytest.mark.parametrize("family, bias", [("lstm", False), ("gru", True), ("gru", False), ("rnn", False), ("rnn_relu", False)])
def test_first_order_backward_equals_the_recorded_backward_bit_for_bit(family, bias, steps, dtype):
    tensors = _inputs(family, steps, 5, 7, dtype, bias)
    out = _run(family, tensors)
    seed = numdiff.tensor(np.random.default_rng(3).standard_normal(tuple(out.shape)), dtype=out.dtype)
    recorded = autograd_grad(out, tensors, seed, create_graph=True)
    assert all(g.requires_grad for g in recorded)  # the recorded path ran
    _run(family, tensors).backward(seed)
    for tensor, expected in zip(tensors, recorded):
        assert tensor.grad is not None and tensor.grad.grad_fn is None
        assert np.array_equal(tensor.grad.numpy(), expected.detach().numpy())


@pytest.mark.parametrize("family", ["lstm", "gru", "rnn"])
def test_first_order_backward_skips_a_weight_that_needs_no_grad(family):
    tensors = _inputs(family, 3, 4, 6, "float64", True)
    weight = tensors[3 if family != "rnn" else 2]
    weight.requires_grad_(False)
    _run(family, tensors).sum().backward()
    assert weight.grad is None
    assert all(t.grad is not None for t in tensors if t.requires_grad)


def test_first_order_backward_of_a_cell_loop_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    xs = rng.standard_normal((6, 3, 4))
    theirs = torch.nn.LSTMCell(4, 9).double()
    ours = numdiff.nn.LSTMCell(4, 9, dtype=numdiff.float64)
    with numdiff.no_grad():
        for mine, their in zip(ours.parameters(), theirs.parameters()):
            mine.copy_(numdiff.tensor(their.detach().numpy()))
    for lib, cell in ((numdiff, ours), (torch, theirs)):
        state, total = None, 0
        for t in range(xs.shape[0]):
            state = cell(lib.tensor(xs[t]), state)
            total = total + (state[0] * state[1]).sum()
        total.backward()
    for mine, their in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(mine.grad.numpy(), their.grad.numpy(), rtol=1e-10, atol=1e-12)
