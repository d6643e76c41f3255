"""Indexing that mixes integers with index arrays reads as PyTorch reads it: the integers select
first, so x[0, :, [1, 3]] has shape (3, 2) where NumPy's rule gives the transpose (2, 3). Keys are
drawn at random (ints, 0-d tensors, slices, None, Ellipsis, lists, index tensors, bool masks) and
getitem, setitem and their gradients compared with torch's."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

SHAPE = (3, 4, 5, 2)


def _random_key(rng: np.random.Generator, lib) -> tuple:
    key, dim = [], 0
    while dim < len(SHAPE):
        kind = rng.choice(["int", "int0d", "slice", "none", "list", "tensor", "mask", "stop"], p=[0.25, 0.05, 0.2, 0.05, 0.15, 0.15, 0.05, 0.1])
        size = SHAPE[dim]
        if kind == "stop":
            break
        if kind == "none":
            key.append(None)
            continue
        if kind == "int":
            key.append(int(rng.integers(-size, size)))
        elif kind == "int0d":
            key.append(lib.tensor(int(rng.integers(0, size))))
        elif kind == "slice":
            key.append(slice(int(rng.integers(0, size)), None, int(rng.integers(1, 3))))
        elif kind == "list":
            key.append([int(i) for i in rng.integers(0, size, 2)])
        elif kind == "tensor":
            key.append(lib.tensor(rng.integers(0, size, (2, 1)) if rng.random() < 0.3 else rng.integers(0, size, 2)))
        else:
            key.append(lib.tensor(rng.random(size) < 0.6))
        dim += 1
    if rng.random() < 0.2:
        key.insert(int(rng.integers(0, len(key) + 1)), Ellipsis)
    return tuple(key)


def _torch_or_error(fn):
    try:
        return fn(), None
    except (IndexError, RuntimeError, ValueError) as error:
        return None, error


@pytest.mark.parametrize("seed", range(60))
def test_random_mixed_keys_read_and_write_as_torch(seed):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(SHAPE)
    for _ in range(10):
        key_seed = int(rng.integers(1 << 30))
        ours_key = _random_key(np.random.default_rng(key_seed), numdiff)
        theirs_key = _random_key(np.random.default_rng(key_seed), torch)
        expected, error = _torch_or_error(lambda key=theirs_key: torch.tensor(values)[key])
        if error is not None:  # a mask and a list that do not broadcast: torch refuses, so must we
            with pytest.raises((IndexError, ValueError)):
                numdiff.tensor(values)[ours_key]
            continue
        x = numdiff.tensor(values, requires_grad=True)
        got = x[ours_key]
        assert tuple(got.shape) == tuple(expected.shape), ours_key
        np.testing.assert_array_equal(got.detach().numpy(), expected.numpy())
        weights = rng.standard_normal(tuple(expected.shape))
        (got * numdiff.tensor(weights)).sum().backward()
        theirs = torch.tensor(values, requires_grad=True)
        (theirs[theirs_key] * torch.tensor(weights)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), theirs.grad.numpy())
        # a write of a value in the read's shape (its first broadcast dim as 1, to broadcast too)
        written = rng.standard_normal(tuple(expected.shape))
        if written.ndim:
            written = written[:1]
        ours, theirs = numdiff.tensor(values), torch.tensor(values)
        ours[ours_key] = numdiff.tensor(written)
        theirs[theirs_key] = torch.tensor(written)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_an_integer_apart_from_the_index_list_keeps_the_list_in_place():
    x = numdiff.arange(24.0).reshape(2, 3, 4)
    assert x[1, :, [0, 2]].tolist() == [[12.0, 14.0], [16.0, 18.0], [20.0, 22.0]]
    assert tuple(x[0, None, :, [1, 3]].shape) == (1, 3, 2) and tuple(x[0, ..., [1, 3]].shape) == (3, 2)
    x[0, :, [1, 3]] = numdiff.tensor([[-1.0, -2.0]])
    assert x[0, :, 1].tolist() == [-1.0] * 3 and x[0, :, 3].tolist() == [-2.0] * 3


def test_gradcheck_through_a_mixed_key_read_and_write():
    x = numdiff.tensor(np.random.default_rng(0).standard_normal((2, 3, 4)), requires_grad=True)
    v = numdiff.tensor(np.random.default_rng(1).standard_normal((3, 2)), requires_grad=True)

    def read_and_write(x, v):
        y = x * 1
        y[1, :, [0, 3]] = v * x[0, :, [2, 1]]
        return y

    assert gradcheck(read_and_write, (x, v))
    assert gradgradcheck(lambda x, v: read_and_write(x, v) ** 2, (x, v))


def test_a_value_of_the_numpy_order_is_refused_naming_both_shapes():
    x = numdiff.zeros(2, 3, 4)
    with pytest.raises(ValueError, match=r"index_put: value of shape \(2, 3\) cannot be broadcast to the indexed shape"):
        x[0, :, [1, 3]] = numdiff.ones(2, 3)
