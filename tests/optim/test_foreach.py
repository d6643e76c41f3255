"""One kernel call per parameter group (numdiff.kernels.optim_foreach) against the per-parameter kernels."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.kernels import optim, optim_steps
from numdiff.kernels.optim_foreach import ForeachUpdate

SIZES = (3, 17, 1, optim.PARALLEL_MIN_ELEMENTS + 5)  # the last one takes the threaded kernel
CASES = {
    "sgd": (3, (True, False), lambda j: (0.1, 0.9, 0.1, 0.01, float(j % 2))),
    "adam": (5, (True, True, False), lambda j: optim_steps.adam_hyper(j + 1, 0.01, 0.9, 0.99, 1e-8, 0.1)),
    "rmsprop": (5, (True, False), lambda j: (0.01, 0.9, 1e-8, 0.1, 0.5)),
    "adagrad": (3, (False,), lambda j: optim_steps.adagrad_hyper(j + 1, 0.1, 0.01, 1e-10, 0.1)),
}


def _group(rng, arity, dtype):
    return [[(rng.random(n) + 0.5).astype(dtype) for _ in range(arity)] for n in SIZES]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_one_call_per_group_equals_one_call_per_parameter(name, dtype):
    arity, flags, hyper = CASES[name]
    rng = np.random.default_rng(0)
    group = _group(rng, arity, dtype)
    copies = [[a.copy() for a in arrays] for arrays in group]
    update = ForeachUpdate(name, flags)
    for j, arrays in enumerate(group):
        update.add(tuple(arrays), hyper(j))
    update.run()
    for j, arrays in enumerate(copies):
        h = hyper(j)
        f = flags + ((bool(h[4]),) if name == "sgd" else ())
        optim_steps.run_kernel(name, tuple(arrays), h[:4] if name == "sgd" else h, f)
    for ours, theirs in zip(group, copies):
        assert not np.array_equal(ours[0], ours[1])  # the update ran
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a, b)


def test_mixed_dtypes_in_one_group_each_get_their_own_call():
    update = ForeachUpdate("adagrad", (False,))
    p32, p64 = np.ones(2, np.float32), np.ones(3)
    update.add((p32, np.ones(2, np.float32), np.zeros(2, np.float32)), (0.1, 1e-10, 0.0))
    update.add((p64, np.ones(3), np.zeros(3)), (0.1, 1e-10, 0.0))
    update.run()
    np.testing.assert_allclose(p32, 0.9, rtol=1e-6)
    np.testing.assert_allclose(p64, 0.9)


def test_bad_arrays_are_rejected_before_anything_changes():
    update = ForeachUpdate("sgd", (False, False))
    p = np.ones(4)
    with pytest.raises(ValueError, match="array 1 has 3 elements but the parameter has 4"):
        update.add((p, np.ones(3), np.empty(0)), (0.1, 0.0, 0.0, 0.0, 1.0))
    with pytest.raises(TypeError, match="array 1 of a parameter must be a flat contiguous float64"):
        update.add((p, np.ones(4, np.float32), np.empty(0)), (0.1, 0.0, 0.0, 0.0, 1.0))
    with pytest.raises(TypeError, match="flat contiguous"):
        update.add((p, np.ones(8)[::2], np.empty(0)), (0.1, 0.0, 0.0, 0.0, 1.0))
    with pytest.raises(ValueError, match="unknown optimizer 'lbfgs'"):
        ForeachUpdate("lbfgs", ())
    update.run()
    np.testing.assert_array_equal(p, np.ones(4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_with_unused_buffers_and_read_only_gradients_equal_one_call_per_parameter(dtype):
    # An unused buffer (SGD without momentum, Adam without amsgrad) is empty and must stay out of
    # the address table; a read-only gradient gives the row's tuple arrays of two types.
    rng = np.random.default_rng(1)
    cases = [
        ("sgd", (False, False), lambda n: (rng.random(n), rng.random(n), np.empty(0)),
         (0.1, 0.0, 0.0, 0.01, 1.0)),
        ("adam", (False, False, False), lambda n: (rng.random(n), rng.random(n), np.zeros(n), np.zeros(n), np.empty(0)),
         optim_steps.adam_hyper(1, 0.01, 0.9, 0.99, 1e-8, 0.0)),
    ]
    for name, flags, arrays_of, h in cases:
        group = []
        for n in (5, 1, 33):
            arrays = [a.astype(dtype) for a in arrays_of(n)]
            arrays[1].flags.writeable = False
            group.append(tuple(arrays))
        copies = [tuple(a.copy() for a in arrays) for arrays in group]
        before = [arrays[0].copy() for arrays in group]
        update = ForeachUpdate(name, flags)
        for arrays in group:
            update.add(arrays, h)
        update.run()
        f = flags + ((bool(h[4]),) if name == "sgd" else ())
        for arrays in copies:
            optim_steps.run_kernel(name, arrays, h[:4] if name == "sgd" else h, f)
        for ours, theirs, start in zip(group, copies, before):
            assert not np.array_equal(ours[0], start)  # the update ran
            for a, b in zip(ours, theirs):
                np.testing.assert_array_equal(a, b)


def test_read_only_gradients_and_views_into_larger_arrays_are_read_at_their_own_address():
    # A gradient NumPy will not let go of as writable memory, and a parameter and gradient that
    # start part-way into a larger array: the kernel reads each at its first element.
    storage = np.arange(10.0)
    grad = np.full(6, 2.0)
    grad.flags.writeable = False
    update = ForeachUpdate("sgd", (False, False))
    update.add((storage[3:9], grad, np.empty(0)), (0.5, 0.0, 0.0, 0.0, 1.0))
    update.add((storage[:2], np.arange(10.0, 14.0)[2:], np.empty(0)), (1.0, 0.0, 0.0, 0.0, 1.0))
    update.run()
    np.testing.assert_array_equal(storage, [-12.0, -12.0, 2.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0])
