"""The one-step cell ops (numdiff.ops.recurrent_cell): bad input refused before any kernel, naming
the op and the values; the first-order backward on arrays against the recorded one that
create_graph runs; vmap's rule (the batch folded into the rows) against a loop; and the cells
recording one op a step."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import grad as autograd_grad
from numdiff.autograd import gradgradcheck
from numdiff.ops._stacked_outputs import unstack_outputs
from numdiff.ops.recurrent_cell import gru_cell_step, lstm_cell_step, rnn_cell_step

N, IN, H = 3, 4, 5


def _inputs(gates: int, states: int, dtype=numdiff.float64, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    shapes = [(N, IN), *[(N, H)] * states, (gates * H, IN), (gates * H, H), (gates * H,), (gates * H,)]
    return [numdiff.tensor(rng.standard_normal(s) * 0.5, dtype=dtype, requires_grad=True) for s in shapes]


STEPS = [(lstm_cell_step, 4, 2), (gru_cell_step, 3, 1), (rnn_cell_step, 1, 1)]


@pytest.mark.parametrize("step, gates, states", STEPS)
def test_first_order_backward_matches_the_recorded_backward(step, gates, states):
    inputs = _inputs(gates, states)
    out = step(*inputs)
    seed = numdiff.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape)))
    direct = autograd_grad(out, inputs, seed)
    recorded = autograd_grad(step(*inputs), inputs, seed, create_graph=True)
    for a, b in zip(direct, recorded):
        assert b.grad_fn is not None  # the create_graph form really ran
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("step, gates, states", STEPS)
def test_vmap_over_rows_and_states_matches_a_loop(step, gates, states):
    inputs = [t.detach() for t in _inputs(gates, states)]
    batch = [numdiff.stack([t * (k + 1) for k in range(2)]) for t in inputs[: 1 + states]]
    got = numdiff.func.vmap(lambda *rows: step(*rows, *inputs[1 + states :]))(*batch)
    expected = numdiff.stack([step(*(b[k] for b in batch), *inputs[1 + states :]) for k in range(2)])
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("step, gates, states", STEPS)
@pytest.mark.parametrize(
    "index, bad, message",
    [
        (0, (N, IN + 1), r"w_ih must have shape \({w}, {i}\) for x \(3, {i}\)"),
        (1, (N + 1, H), r"must have shape \(3, 5\)"),
        (-1, (H + 1,), r"b_hh must have shape \({w},\)"),
    ],
)
def test_a_shape_mismatch_names_the_op_and_the_shapes(step, gates, states, index, bad, message):
    inputs = _inputs(gates, states)
    inputs[index] = numdiff.zeros(*bad, dtype=numdiff.float64)
    width, i = gates * H, inputs[0].shape[1]
    with pytest.raises(ValueError, match=step.__name__ + ": .*" + message.format(w=width, i=i)):
        step(*inputs)


@pytest.mark.parametrize("step, gates, states", STEPS)
def test_every_operand_in_a_wrong_shape_of_its_size_is_refused(step, gates, states):
    # The common case is passed on the arrays alone (_host_step_operands): an operand with the
    # right element count in another shape (transposed, a bias as a row) must still reach the
    # full check, which names it.
    inputs = _inputs(gates, states)
    for index, t in enumerate(inputs):
        bad = list(inputs)
        bad[index] = t.detach().reshape(1, -1) if t.ndim == 1 else t.detach().t().contiguous()
        if bad[index].shape == t.shape:  # RNN's square w_hh
            continue
        with pytest.raises(ValueError, match=step.__name__ + r": .* must have shape"):
            step(*bad)


@pytest.mark.parametrize("step, gates, states", STEPS)
def test_mixed_dtypes_a_non_tensor_and_a_bad_w_hh_are_refused(step, gates, states):
    inputs = _inputs(gates, states)
    mixed = [*inputs[:-1], inputs[-1].float()]
    with pytest.raises(TypeError, match=step.__name__ + r": expected float32 or float64 tensors of one dtype, got .*'b_hh': 'numdiff.float32'"):
        step(*mixed)
    with pytest.raises(TypeError, match=step.__name__ + r": h must be a Tensor, got ndarray"):
        step(inputs[0], inputs[1].detach().numpy(), *inputs[2:])
    with pytest.raises(ValueError, match=step.__name__ + rf": w_hh must have shape \({gates}\*H, H\) with H >= 1, got \(7, 5\)"):
        step(*inputs[:-3], numdiff.zeros(7, 5, dtype=numdiff.float64), *inputs[-2:])
    with pytest.raises(TypeError, match=step.__name__ + r": expected float32 or float64 .*numdiff.int64"):
        step(*(t.detach().long() for t in inputs))


@pytest.mark.parametrize(
    "cls_name, op",
    [("LSTMCell", "lstm_cell_step"), ("GRUCell", "gru_cell_step"), ("RNNCell", "rnn_cell_step")],
)
def test_a_cell_records_its_step_as_one_op(cls_name, op):
    cell = getattr(numdiff.nn, cls_name)(IN, H)
    out = cell(numdiff.randn(N, IN), None)
    h = out[0] if cls_name == "LSTMCell" else out
    node = h.grad_fn
    if cls_name == "LSTMCell":  # h' and c' are the two rows of the op's (2, N, H) output, one port each
        assert node.next_functions[0][0] is out[1].grad_fn.next_functions[0][0]
        node = node.next_functions[0][0]
    assert node.op_name == op
    # the step's own inputs: x (needs no grad), the states (zeros), and the four parameters
    assert [n is None for n, _ in node.next_functions].count(False) == 4


def _torch_lstm_cell(cell: numdiff.nn.LSTMCell):
    import torch

    theirs = torch.nn.LSTMCell(cell.input_size, cell.hidden_size).double()
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            p.copy_(torch.from_numpy(getattr(cell, name).detach().numpy()))
    return torch, theirs


@pytest.mark.parametrize("used", ["h", "c", "both", "h_of_a_loop"])
def test_lstm_cell_h_and_c_are_tensors_of_their_own_whose_gradients_meet_in_one_node(used):
    # h' and c' reach the step's node through a port each; a result no loss used (c' of the
    # last step, or h') gets zeros there, as PyTorch's cell gives it.
    cell = numdiff.nn.LSTMCell(IN, H).double()
    torch, theirs = _torch_lstm_cell(cell)
    xs = np.random.default_rng(4).standard_normal((3, N, IN))
    grads = []
    for lib, module in ((numdiff, cell), (torch, theirs)):
        x = lib.tensor(xs, requires_grad=True)
        h = c = lib.zeros(N, H, dtype=x.dtype)
        loss = 0
        for t in range(3):
            h, c = module(x[t], (h, c))
            if used == "h_of_a_loop":
                loss = loss + (h * h).sum()
        if used != "h_of_a_loop":
            loss = {"h": (h**2).sum(), "c": (c**3).sum(), "both": (h * c).sum()}[used]
        loss.backward()
        grads.append([h.detach().numpy(), c.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in module.parameters()])
        if lib is numdiff:
            assert h._base is None and c._base is None
            assert h.grad_fn.next_functions[0][0] is c.grad_fn.next_functions[0][0]
    for mine, their in zip(*grads):
        np.testing.assert_allclose(mine, their, rtol=1e-12, atol=1e-14)


def test_lstm_cell_results_take_hooks_retain_grad_and_writes_of_their_own():
    cell = numdiff.nn.LSTMCell(IN, H).double()
    h, c = cell(numdiff.randn(N, IN, dtype=numdiff.float64))
    seen = []
    h.register_hook(lambda g: seen.append(g.shape) or g * 2)
    c.retain_grad()
    c_before = c.detach().clone()
    (h.sum() + c.sum()).backward()
    assert seen == [numdiff.Size([N, H])] and np.all(c.grad.numpy() == 1.0)
    h2, c2 = cell(numdiff.randn(N, IN, dtype=numdiff.float64))
    h2.mul_(0.0)  # h2 shares no memory with c2, and no saved tensor of the step
    assert np.all(h2.detach().numpy() == 0.0) and not np.all(c2.detach().numpy() == 0.0)
    (c2.sum() + h2.sum()).backward()
    assert np.array_equal(c.detach().numpy(), c_before.numpy())


def test_lstm_cell_second_derivatives_through_both_results():
    # create_graph: the ports' gradients are stacked by a recorded op, so they differentiate again.
    cell = numdiff.nn.LSTMCell(2, 3).double()
    x, h, c = (numdiff.randn(2, s, dtype=numdiff.float64, requires_grad=True) for s in (2, 3, 3))
    assert gradgradcheck(lambda x, h, c, w: cell(x, (h, c)), (x, h, c, cell.weight_hh))


def test_lstm_cell_results_without_grad_mode_record_nothing():
    cell = numdiff.nn.LSTMCell(IN, H)
    with numdiff.no_grad():
        h, c = cell(numdiff.randn(N, IN))
    assert h.grad_fn is None and c.grad_fn is None and h._base is None


def test_lstm_cell_results_under_grad_of_some_inputs_and_backward_inputs():
    # A backward that needs fewer inputs narrows the nodes it runs: the ports keep their slots.
    cell = numdiff.nn.LSTMCell(IN, H).double()
    x, y = (numdiff.randn(N, IN, dtype=numdiff.float64, requires_grad=True) for _ in range(2))
    h, c = cell(x * y)
    loss = (h * c).sum()
    (alone,) = autograd_grad(loss, [x], retain_graph=True)
    with_weight, _ = autograd_grad(loss, [x, cell.weight_hh], retain_graph=True)
    np.testing.assert_array_equal(alone.numpy(), with_weight.numpy())
    loss.backward(inputs=[y])
    assert x.grad is None and y.grad is not None and h.grad_fn.name() == "LSTMCellStepBackward"
    with pytest.raises(RuntimeError, match="already unstacked"):
        step = h.grad_fn.next_functions[0][0]
        unstack_outputs(numdiff.Tensor._wrap(h._data, step, None))
