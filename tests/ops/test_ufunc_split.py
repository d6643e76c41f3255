"""numdiff.ops._ufunc_split: large arithmetic forwards run the rule's parallel loop at two threads,
with the ufunc's result bit for bit, and every other call keeps the ufunc."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import numpy as np
import pytest

import numdiff
from numdiff._threads import thread_pool_size
from numdiff.ops import _elementwise_eager, _ufunc_split

torch = pytest.importorskip("torch")

needs_two_threads = pytest.mark.skipif(thread_pool_size() < 2, reason="Numba's pool has one thread")

# name: (numdiff function, torch function, NumPy ufunc, arity)
OPS = {
    "add": (numdiff.add, torch.add, np.add, 2),
    "sub": (numdiff.sub, torch.sub, np.subtract, 2),
    "mul": (numdiff.mul, torch.mul, np.multiply, 2),
    "div": (numdiff.div, torch.div, np.true_divide, 2),
    "neg": (numdiff.neg, torch.neg, np.negative, 1),
    "abs": (numdiff.abs, torch.abs, np.absolute, 1),
    "square": (numdiff.square, torch.square, np.square, 1),
    "reciprocal": (numdiff.reciprocal, torch.reciprocal, np.reciprocal, 1),
}


@contextmanager
def threads(n: int) -> Iterator[None]:
    before = numdiff.get_num_threads()
    numdiff.set_num_threads(n)
    try:
        yield
    finally:
        numdiff.set_num_threads(before)


@contextmanager
def counting_loop_calls() -> Iterator[list]:
    """Count the calls that reach the rule's loop (numdiff.kernels.elementwise.forward)."""
    from numdiff.kernels import elementwise

    calls: list = []
    real = elementwise.forward

    def counted(*args, **kwargs):
        calls.append(args[0].name)
        return real(*args, **kwargs)

    with mock.patch.object(elementwise, "forward", counted):
        yield calls


def _operands(name: str, dtype: type, size: int) -> list[np.ndarray]:
    rng = np.random.default_rng(len(name))
    arrays = [rng.uniform(0.5, 2.0, size).astype(dtype) * rng.choice([-1, 1], size).astype(dtype)]
    if OPS[name][3] == 2:
        arrays.append(rng.uniform(0.5, 2.0, size).astype(dtype))
    return arrays


def test_exact_rules_are_the_ones_tested_here() -> None:
    assert set(OPS) == set(_ufunc_split.EXACT_LOOP_RULES)


@needs_two_threads
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(OPS))
def test_large_forward_at_two_threads_runs_the_loop_with_the_ufuncs_bits(name: str, dtype: type) -> None:
    ours, theirs, ufunc, _ = OPS[name]
    arrays = _operands(name, dtype, _ufunc_split.SPLIT_MIN_ELEMENTS + 3)
    with threads(2), counting_loop_calls() as calls:
        two = ours(*map(numdiff.tensor, arrays)).numpy()
    assert calls == [name]
    with threads(1), counting_loop_calls() as calls:
        one = ours(*map(numdiff.tensor, arrays)).numpy()
    assert calls == []
    expected = ufunc(*arrays)
    assert two.dtype == expected.dtype and two.flags.c_contiguous
    assert two.tobytes() == expected.tobytes() == one.tobytes()
    np.testing.assert_array_equal(two, theirs(*map(torch.from_numpy, arrays)).numpy())


@needs_two_threads
@pytest.mark.parametrize("number", [0.1, 3, -7.25])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_a_python_number_operand_rounds_as_numpy_does(name: str, number: float) -> None:
    ours, _, ufunc, _ = OPS[name]
    (x,) = _operands(name, np.float32, _ufunc_split.SPLIT_MIN_ELEMENTS)[:1]
    with threads(2), counting_loop_calls() as calls:
        left = ours(numdiff.tensor(x), number).numpy()
        right = ours(number, numdiff.tensor(x)).numpy()
    assert calls == [name, name]
    assert left.tobytes() == ufunc(x, number).tobytes()
    assert right.tobytes() == ufunc(number, x).tobytes()


@needs_two_threads
def test_special_values_match_the_ufunc() -> None:
    size = _ufunc_split.SPLIT_MIN_ELEMENTS
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38], np.float32)
    x = np.resize(specials, size)
    y = np.resize(specials[::-1], size)
    with threads(2), np.errstate(all="ignore"):
        for name in ("add", "sub", "mul", "div"):
            ours, _, ufunc, _ = OPS[name]
            np.testing.assert_array_equal(ours(numdiff.tensor(x), numdiff.tensor(y)).numpy(), ufunc(x, y))
        for name in ("neg", "abs", "square", "reciprocal"):
            ours, _, ufunc, _ = OPS[name]
            assert np.array_equal(ours(numdiff.tensor(x)).numpy(), ufunc(x), equal_nan=True)


@needs_two_threads
def test_strided_broadcast_and_small_operands_keep_the_ufunc() -> None:
    size = _ufunc_split.SPLIT_MIN_ELEMENTS
    rng = np.random.default_rng(0)
    square = rng.standard_normal((1024, size // 1024)).astype(np.float32)
    with threads(2), counting_loop_calls() as calls:
        transposed = numdiff.add(numdiff.tensor(square).T, 1.0)
        broadcast = numdiff.mul(numdiff.tensor(square), numdiff.tensor(square[:1]))
        small = numdiff.add(numdiff.tensor(square[:2]), 1.0)
    assert calls == []
    # The ufunc's result keeps a transposed operand's layout, as PyTorch's does.
    assert transposed.numpy().flags.f_contiguous and transposed.stride() == (1, 512)
    np.testing.assert_array_equal(broadcast.numpy(), square * square[:1])
    np.testing.assert_array_equal(small.numpy(), square[:2] + np.float32(1.0))


@needs_two_threads
def test_promoted_operands_give_numpys_promoted_result() -> None:
    size = _ufunc_split.SPLIT_MIN_ELEMENTS
    x = np.random.default_rng(1).standard_normal(size).astype(np.float32)
    with threads(2):
        mixed = numdiff.add(numdiff.tensor(x), numdiff.tensor(x.astype(np.float64) / 3))
        numpy_scalar = numdiff.mul(numdiff.tensor(x), np.float32(2.5))
    assert mixed.dtype == numdiff.float64 and numpy_scalar.dtype == numdiff.float32
    assert mixed.numpy().tobytes() == (x.astype(np.float64) + x.astype(np.float64) / 3).tobytes()
    assert numpy_scalar.numpy().tobytes() == (x * np.float32(2.5)).tobytes()


@needs_two_threads
def test_operands_that_do_not_broadcast_raise_the_ops_error() -> None:
    size = _ufunc_split.SPLIT_MIN_ELEMENTS
    with threads(2), pytest.raises((ValueError, RuntimeError), match=r"add.*\(524288,\).*\(3,\)|add.*broadcast"):
        numdiff.add(numdiff.ones(size), numdiff.ones(3))


@needs_two_threads
@pytest.mark.parametrize("name", sorted(OPS))
def test_gradients_through_the_loop_route_match_central_differences(name: str, monkeypatch) -> None:
    ours = OPS[name][0]
    # The loop route on small float64 inputs, on the eager fast path and through Function.apply.
    monkeypatch.setattr(_ufunc_split, "SPLIT_MIN_ELEMENTS", 4)
    monkeypatch.setattr(_elementwise_eager, "SPLIT_MIN_ELEMENTS", 4)
    inputs = [numdiff.tensor(a, requires_grad=True) for a in _operands(name, np.float64, 6)]
    with threads(2), counting_loop_calls() as calls:
        assert numdiff.autograd.gradcheck(ours, tuple(inputs))
    assert name in calls
