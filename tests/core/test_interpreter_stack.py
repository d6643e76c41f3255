"""The one door: op calls go to this thread's innermost interpreter, and nesting follows the stack."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import numdiff as nd
import numdiff._inplace as inplace
import numdiff.creation as creation
from numdiff import func
from numdiff.autograd import engine
from numdiff.autograd.function import Function
from numdiff.autograd.transform_state import Interpreter, anywhere, interpreting, transforms
from numdiff.compile.trace import Tracer, Tracing, UnsupportedInCompileError
from numdiff.tensor import Tensor


class Recorder(Interpreter):
    """Notes the op names and input shapes it sees, then hands each op to the level below."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple]] = []

    def apply(self, cls, inputs, attrs):
        shapes = tuple(tuple(t.shape) for t in inputs if isinstance(t, Tensor))
        self.seen.append((cls.op_name, shapes))
        return super().apply(cls, inputs, attrs)


def _entry_points() -> list:
    tensor_module = sys.modules[Tensor.__module__]
    reads = [Tensor.__dict__[name] for name in ("__bool__", "item", "numpy", "tolist", "__float__", "__int__", "__index__")]
    return [Function.__dict__["apply"], *reads, inplace.apply_inplace, creation.rng, engine.run_backward,
            tensor_module.run_backward]


def test_tracing_patches_no_module_attribute():
    before = _entry_points()
    with Tracing(Tracer()):
        during = _entry_points()
    assert all(a is b for a, b in zip(before, during))


def test_tracing_still_refuses_what_a_replay_cannot_repeat():
    x = nd.ones(3)
    tracer = Tracer()
    tracer.add_input(x, 0)  # an argument: a host read of a value computed from it breaks the graph
    with Tracing(tracer):
        # In-place updates and numdiff's random functions are replayed (numdiff/compile/effects.py);
        # a view written in place, and a draw outside those functions, are not.
        with pytest.raises(UnsupportedInCompileError, match="in-place.*view|view"):
            x[:2].add_(1)
        with pytest.raises(UnsupportedInCompileError, match="random"):
            creation.rng(None)
        y = (x * 2).sum()
        with pytest.raises(RuntimeError, match=r"Tensor\.item\(\)"):
            y.item()
        with pytest.raises(RuntimeError, match=r"Tensor\.__bool__\(\)"):
            bool(y > 0)
    assert transforms.interpreter is None


def test_an_interpreter_below_vmap_sees_the_batched_ops_one_above_sees_one_example():
    x = nd.tensor(np.arange(6.0).reshape(3, 2))
    with interpreting(Recorder()) as below:
        func.vmap(lambda r: (r * 2.0).sum())(x)
    assert below.seen == [("mul", ((3, 2),)), ("sum", ((3, 2),))]

    above = Recorder()

    def inner(r: Tensor) -> Tensor:
        with interpreting(above):
            return (r * 2.0).sum()

    out = func.vmap(inner)(x)
    assert above.seen == [("mul", ((2,),)), ("sum", ((2,),))]  # the logical (per-example) shapes
    np.testing.assert_array_equal(out.numpy(), [2.0, 10.0, 18.0])


def test_vmap_inside_a_compiled_function_matches_eager():
    w = nd.tensor([0.5, -1.0, 2.0])
    f = nd.compile(lambda x: func.vmap(lambda r: (r * w).sin().sum())(x))
    for shift in range(3):
        x = nd.tensor(np.arange(12.0).reshape(4, 3) + shift)
        np.testing.assert_allclose(f(x).numpy(), np.sin(x.numpy() * w.numpy()).sum(1), rtol=1e-12)


def test_a_compiled_function_under_vmap_batches_every_op():
    # Tracing it on batched tensors would record one example's view of each.
    g = nd.compile(lambda r: (r * 2.0).sin() + r.sum())
    x = nd.tensor(np.arange(12.0).reshape(4, 3))
    expected = np.sin(x.numpy() * 2.0) + x.numpy().sum(1, keepdims=True)
    np.testing.assert_allclose(func.vmap(g)(x).numpy(), expected, rtol=1e-12)


def test_grad_of_vmap_and_vmap_of_grad_through_the_stack():
    x = nd.tensor(np.linspace(-1.0, 1.0, 6).reshape(3, 2))
    per_row = func.vmap(func.grad(lambda r: (r.sin() * r).sum()))(x)
    expected = np.sin(x.numpy()) + x.numpy() * np.cos(x.numpy())
    np.testing.assert_allclose(per_row.numpy(), expected, rtol=1e-12)
    whole = func.grad(lambda v: func.vmap(lambda r: (r.sin() * r).sum())(v).sum())(x)
    np.testing.assert_allclose(whole.numpy(), expected, rtol=1e-12)


def test_the_stack_unwinds_when_a_transformed_function_raises():
    levels = anywhere.levels

    def fails(r: Tensor) -> Tensor:
        raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        func.vmap(fails)(nd.ones(3, 2))
    with pytest.raises(ValueError, match="inside"), Tracing(Tracer()):
        fails(nd.ones(2))
    assert transforms.interpreter is None and transforms.vmap_depth == 0
    assert anywhere.levels == levels


def test_elementwise_host_functions_batch_at_every_vmap_level():
    a = nd.tensor(np.arange(24.0).reshape(2, 3, 4) % 5)
    b = nd.tensor(np.arange(4.0) % 3)
    nested = func.vmap(func.vmap(lambda x, y: nd.eq(x, y) | nd.isinf(x / (y - 1)), in_dims=(0, None)), in_dims=(0, None))
    with np.errstate(divide="ignore", invalid="ignore"):  # x / 0 is the point: inf (and NaN for 0 / 0)
        expected = (a.numpy() == b.numpy()) | np.isinf(a.numpy() / (b.numpy() - 1))
        np.testing.assert_array_equal(nested(a, b).numpy(), expected)
    # An operand batched only at the outer level, compared inside the inner vmap.
    x = nd.tensor(np.arange(12.0).reshape(3, 4) % 3)
    columns = b.unsqueeze(1).expand(4, 4)
    outer = func.vmap(lambda r: func.vmap(lambda c: nd.lt(r, c))(columns))(x)
    np.testing.assert_array_equal(outer.numpy(), x.numpy()[:, None, :] < columns.numpy()[None, :, :])
    assert func.vmap(nd.isnan)(nd.tensor([[0.0, np.nan], [np.nan, 1.0]])).tolist() == [[False, True], [True, False]]
