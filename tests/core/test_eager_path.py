"""The eager op path that Function.apply writes out for speed (benchmarks/bench_tape.py): the node
it records, the unrecorded path, the saved-value checks and the freeing of saved state."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import SavedTensorFreedError
from numdiff.autograd.function import AccumulateGrad, Node, SavedTensorModifiedError
from numdiff.ops.elementwise import FUNCTIONS
from tests.python_calls import calls_into


def test_recorded_node_matches_what_node_builds():
    """apply fills the node in its own pass over the inputs; Node(...) (custom Functions, compile)
    must describe the same op the same way."""
    leaf = numdiff.tensor([1.0, 2.0], requires_grad=True)
    inner = leaf * 3.0
    constant = numdiff.tensor([[4.0, 5.0]])
    for inputs in ((inner, constant), (constant, leaf), (inner, 2.0), (leaf, inner)):
        recorded = FUNCTIONS["mul"].apply(*inputs).grad_fn
        built = Node(FUNCTIONS["mul"], inputs, {})
        assert recorded.next_nodes == built.next_nodes
        assert recorded.input_shapes == built.input_shapes
        assert recorded.needs_input_grad == built.needs_input_grad
        assert recorded.attrs == built.attrs == {}
        assert recorded._pre_hooks is None and recorded._retained is None and recorded.creation_site is None
    assert isinstance(FUNCTIONS["mul"].apply(constant, leaf).grad_fn.next_nodes[1], AccumulateGrad)


def test_an_op_under_no_grad_makes_no_accumulator_for_a_leaf():
    leaf = numdiff.tensor([1.0, 2.0], requires_grad=True)
    with numdiff.no_grad():
        out = leaf.sin()
    assert out.grad_fn is None and not out.requires_grad
    assert leaf._grad_accumulator is None


def test_an_op_on_tensors_that_need_no_grad_records_nothing():
    a, b = numdiff.tensor([1.0, 2.0]), numdiff.tensor([3.0, 4.0])
    out = a * b
    assert out.grad_fn is None and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), [3.0, 8.0])


@pytest.mark.parametrize("modify", ["input", "output"])
def test_a_saved_array_changed_in_place_fails_the_small_backward(modify):
    x = numdiff.tensor([0.5, 1.0], dtype=numdiff.float64, requires_grad=True)
    y = x * 1.0
    out = y.sin() if modify == "input" else y.exp()
    (y if modify == "input" else out).mul_(2.0)
    with pytest.raises(SavedTensorModifiedError, match="version 0 and is now at version 1"):
        out.sum().backward()


def test_backward_frees_saved_state_but_keeps_a_node_that_saved_nothing_reusable():
    x = numdiff.tensor([0.5, 1.0], dtype=numdiff.float64, requires_grad=True)
    saving = (x * 1.0).exp().sum()
    saving.backward()
    node = saving.grad_fn.next_nodes[0]
    assert node._freed and node._saved == () and node._saved_versions == ()
    with pytest.raises(SavedTensorFreedError, match="retain_graph=True"):
        saving.backward()
    plain = (x + 1.0).sum()  # add saves nothing: a second backward works, as in PyTorch
    x.grad = None
    plain.backward()
    plain.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def _function_py_calls(run, file="numdiff/autograd/function.py"):
    return calls_into((file,), run)


def test_apply_runs_an_op_without_helper_calls_of_its_own():
    """The per-op cost (issue 25): recorded, unrecorded and no_grad ops all stay inside apply (a
    comprehension or a helper would be one more Python call per op)."""
    add = FUNCTIONS["add"]  # saves nothing: no saved-value binding to call
    leaf = numdiff.tensor([1.0, 2.0], requires_grad=True)
    constant = numdiff.tensor([3.0, 4.0])
    held = add.apply(leaf, constant)  # keeps the leaf's AccumulateGrad (weakly held) alive for reuse
    assert _function_py_calls(lambda: add.apply(leaf, constant)) == ["apply"]
    assert _function_py_calls(lambda: add.apply(constant, constant)) == ["apply"]
    with numdiff.no_grad():
        assert _function_py_calls(lambda: add.apply(leaf, constant)) == ["apply"]
    assert held.grad_fn.needs_input_grad == (True, False)
    assert add.apply(constant, leaf).grad_fn.needs_input_grad == (False, True)
    assert add.apply(leaf, 2.0).grad_fn.needs_input_grad == (True, False)


def test_a_tensor_and_a_python_number_meet_without_operand_lookups():
    """``x * 0.5``: a Python number joins as it is, and the Tensor beside it is not looked at
    for sparse or protocol operands (two helper calls each, per op)."""
    x = numdiff.tensor([1.0, 2.0], requires_grad=True)
    calls = _function_py_calls(lambda: (x * 0.5, 2 + x, x + True), "numdiff/ops/_util.py")
    assert "_joining" not in calls
    with pytest.raises(TypeError, match="mul: unsupported operand type str"):
        x * "a"


def test_dense_products_skip_the_sparse_and_copied_row_checks():
    x, w = numdiff.randn(4, 3, requires_grad=True), numdiff.nn.Parameter(numdiff.randn(2, 3))
    batched = numdiff.randn(5, 4, 3)
    calls = _function_py_calls(lambda: (x @ w.T, numdiff.mm(x, w.T), numdiff.nn.functional.linear(x, w),
                                        batched @ w.T), "numdiff/ops/linalg.py")
    assert "_sparse" not in calls and "_copied_rows" not in calls
    assert numdiff.allclose(x @ w.T, numdiff.nn.functional.linear(x, w))
    shared = numdiff.randn(1, 4, 3).expand(5, 4, 3)  # stride-0 rows: the copied-row path still runs
    assert numdiff.allclose(shared @ w.T, (shared.contiguous() @ w.T))


def test_tensor_operators_that_defer_to_protocol_operands_skip_the_lookup_for_tensors():
    a, w = numdiff.randn(3, 4), numdiff.nn.Parameter(numdiff.randn(4, 2))
    assert _function_py_calls(lambda: (a @ w, w.T @ a.T, a // a), "numdiff/overrides.py") == []
