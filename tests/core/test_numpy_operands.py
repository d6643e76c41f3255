"""A NumPy array next to a tensor in arithmetic joins as a tensor, as in PyTorch: its dtype takes
part in promotion, the result is a Tensor, and gradients reach the tensor operand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "pow"])
@pytest.mark.parametrize("tensor_dtype, array_dtype", [("float32", "float64"), ("float32", "int64"), ("int32", "int64"), ("float64", "float32")])
def test_tensor_and_array_match_torch(op, tensor_dtype, array_dtype):
    base = np.array([1.5, 2.0, 3.0]) if tensor_dtype.startswith("float") else np.array([1, 2, 3])
    array = np.array([2, 1, 3]).astype(array_dtype)
    ours = getattr(numdiff, op)(numdiff.tensor(base).to(getattr(numdiff, tensor_dtype)), array)
    theirs = getattr(torch, op)(torch.tensor(base).to(getattr(torch, tensor_dtype)), torch.from_numpy(array))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_operators_with_arrays_on_either_side_keep_gradients():
    x = numdiff.tensor([1.0, 2.0], requires_grad=True)
    weights = np.array([3.0, 4.0], dtype=np.float32)
    (x * weights + weights - x / weights).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), weights - 1 / weights, rtol=1e-6)
    assert isinstance(weights + x, numdiff.Tensor)


def test_an_array_without_a_numdiff_dtype_is_refused_by_name():
    with pytest.raises(TypeError, match="add: a NumPy operand of dtype <U1"):
        numdiff.ones(1) + np.array(["a"])
