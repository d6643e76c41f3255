"""The one-step cell ops (numdiff.ops.recurrent_cell): bad input refused before any kernel, naming
the op and the values; the first-order backward on arrays against the recorded one that
create_graph runs; vmap's rule (the batch folded into the rows) against a loop; and the cells
recording one op a step."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import grad as autograd_grad
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
    if cls_name == "LSTMCell":  # h' and c' are the two rows of the op's (2, N, H) output
        assert node.op_name == "getitem"
        node = node.next_functions[0][0]
    assert node.op_name == op
    # the step's own inputs: x (needs no grad), the states (zeros), and the four parameters
    assert [n is None for n, _ in node.next_functions].count(False) == 4
