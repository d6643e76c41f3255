"""Hand-written time loops of RNNCell / LSTMCell / GRUCell, eager (each step the family's sequence op
over one step, or composed from ops where the batch is small against the hidden size) and under
numdiff.compile (each step composed from ops): losses and every gradient
against torch in float32 and float64, across bias, hx given or None, batch and hidden sizes, plus
gradcheck of one step through its states and the composed dtypes (float16) that keep the old path."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.autograd import gradcheck

torch = pytest.importorskip("torch")

CELLS = [
    ("RNNCell", {}),
    ("RNNCell", {"nonlinearity": "relu"}),
    ("RNNCell", {"nonlinearity": "relu", "bias": False}),
    ("LSTMCell", {}),
    ("LSTMCell", {"bias": False}),
    ("GRUCell", {}),
    ("GRUCell", {"bias": False}),
]
# (input, hidden, batch, steps): batch 1 and hidden sizes that are no multiple of a vector width;
# the last is a batch too small for its hidden size, which keeps the composed step eagerly too.
SIZES = [(3, 16, 1, 4), (5, 37, 7, 3), (3, 520, 1, 2)]
TOLERANCE = {"float32": {"rtol": 2e-4, "atol": 2e-5}, "float64": {"rtol": 1e-10, "atol": 1e-12}}


def _pair(cls_name, kwargs, input_size, hidden, dtype):
    theirs = getattr(torch.nn, cls_name)(input_size, hidden, **kwargs).to(getattr(torch, dtype))
    ours = getattr(nn, cls_name)(input_size, hidden, **kwargs).to(getattr(numdiff, dtype))
    with numdiff.no_grad():
        for mine, their in zip(ours.parameters(), theirs.parameters()):
            mine.copy_(numdiff.tensor(their.detach().numpy()))
    return ours, theirs


def _loop(lib, cell, lstm, xs, state, weights):
    """sum over steps of (h_t * weights_t).sum(), the states carried by hand as a user writes it."""
    total = 0
    for t in range(xs.shape[0]):
        state = cell(xs[t], state)
        h = state[0] if lstm else state
        total = total + (h * weights[t]).sum()
    return total + ((state[1] * weights[0]).sum() if lstm else 0)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("sizes", SIZES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("cls_name, kwargs", CELLS, ids=[f"{c}{k}" for c, k in CELLS])
@pytest.mark.parametrize("with_hx", [True, False], ids=["hx", "no_hx"])
def test_cell_loop_matches_torch(cls_name, kwargs, sizes, dtype, compiled, with_hx):
    rng = np.random.default_rng(7)
    input_size, hidden, batch, steps = sizes
    ours, theirs = _pair(cls_name, kwargs, input_size, hidden, dtype)
    lstm = cls_name == "LSTMCell"
    arrays = [rng.standard_normal((steps, batch, input_size)), rng.standard_normal((steps, batch, hidden))]
    arrays += [rng.standard_normal((batch, hidden)) for _ in range(2)]
    x, w, h0, c0 = (numdiff.tensor(a.astype(dtype), requires_grad=True) for a in arrays)
    x_t, w_t, h0_t, c0_t = (torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays)
    states = ((h0, c0) if lstm else (h0,)) if with_hx else ()
    state_t = ((h0_t, c0_t) if lstm else h0_t) if with_hx else None

    def run(x, *states):  # states positional: compile traces tensors passed that way only
        return _loop(numdiff, ours, lstm, x, (states if lstm else states[0]) if states else None, w)

    run = numdiff.compile(run) if compiled else run
    for _ in range(2 if compiled else 1):  # a compiled function's second call runs the compiled graph
        for p in ours.parameters():
            p.grad = None
        x.grad = h0.grad = c0.grad = None
        loss = run(x, *states)
        loss.backward()
    loss_t = _loop(torch, theirs, lstm, x_t, state_t, w_t)
    loss_t.backward()
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(loss.item(), loss_t.item(), err_msg="loss", **tol)
    pairs = [("x", x, x_t)] + ([("h0", h0, h0_t)] + ([("c0", c0, c0_t)] if lstm else []) if with_hx else [])
    pairs += [(name, p, q) for (name, p), q in zip(ours.named_parameters(), theirs.parameters())]
    for name, mine, their in pairs:
        assert mine.grad is not None, f"{cls_name}: no gradient reached {name}"
        np.testing.assert_allclose(mine.grad.numpy(), their.grad.numpy(), err_msg=f"grad of {name}", **tol)


@pytest.mark.parametrize("cls_name, kwargs", CELLS, ids=[f"{c}{k}" for c, k in CELLS])
def test_one_step_gradcheck_through_input_states_and_weights(cls_name, kwargs):
    rng = np.random.default_rng(3)
    cell = getattr(nn, cls_name)(3, 4, **kwargs).double()
    x, h, c = (numdiff.tensor(rng.standard_normal((2, s)), requires_grad=True) for s in (3, 4, 4))
    if cls_name == "LSTMCell":
        assert gradcheck(lambda x, h, c, w_ih, w_hh: cell(x, (h, c)), (x, h, c, cell.weight_ih, cell.weight_hh))
    else:
        assert gradcheck(lambda x, h, w_ih, w_hh: cell(x, h), (x, h, cell.weight_ih, cell.weight_hh))


@pytest.mark.parametrize("cls_name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_float16_cells_keep_the_composed_step(cls_name):
    """The sequence kernels take float32 and float64 only; a float16 cell runs its composed step and
    agrees with the float32 cell to float16's precision."""
    cell = getattr(nn, cls_name)(3, 5)
    half = getattr(nn, cls_name)(3, 5).half()
    half.load_state_dict({k: v.half() for k, v in cell.state_dict().items()})
    x = numdiff.randn(2, 3)
    out, out_half = cell(x), half(x.half())
    out, out_half = (out[0], out_half[0]) if cls_name == "LSTMCell" else (out, out_half)
    assert out_half.dtype == numdiff.float16
    np.testing.assert_allclose(out_half.float().detach().numpy(), out.detach().numpy(), atol=5e-3)


@pytest.mark.parametrize("cls_name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_state_of_another_dtype_is_refused_before_any_kernel(cls_name):
    cell = getattr(nn, cls_name)(3, 4)
    h = numdiff.zeros(2, 4, dtype=numdiff.float64)
    state = (h, h) if cls_name == "LSTMCell" else h
    with pytest.raises(TypeError, match=r"float32 or float64 tensors of one dtype.*float64"):
        cell(numdiff.zeros(2, 3), state)


@pytest.mark.parametrize("cls_name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_vmap_over_a_cell_batches_the_composed_step(cls_name):
    """Under vmap a cell keeps the composed step, which batches op by op (the sequence ops have no
    batching rule and would warn and loop): same values as the cell on each example."""
    from numdiff.func import vmap

    cell = getattr(nn, cls_name)(3, 4).double()
    x = numdiff.randn(5, 2, 3, dtype=numdiff.float64)
    h = numdiff.randn(5, 2, 4, dtype=numdiff.float64)

    def step(x, h):
        out = cell(x, (h, h)) if cls_name == "LSTMCell" else cell(x, h)
        return out[0] if cls_name == "LSTMCell" else out

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batched = vmap(step)(x, h)
    expected = numdiff.stack([step(x[i], h[i]) for i in range(5)])
    np.testing.assert_allclose(batched.detach().numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-14)
