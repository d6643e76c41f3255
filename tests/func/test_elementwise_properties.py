"""Properties of @numdiff.elementwise beyond the derivative table: broadcast shapes, dtype
combinations (float16/32/64 with each other and with Python numbers), non-contiguous inputs, and
in-place use of inputs and results; values against the Python function itself, gradients against
torch autograd on the same function."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import numdiff
from tests.func.elementwise_reference import torch_values_and_grads


def mixed(x, y):
    if x > y:
        return math.exp(-x * x) * y
    z = math.sin(x) - y**2.0
    return z / (1.0 + abs(y))


OP = numdiff.elementwise(mixed)
DTYPES = {"float16": (numdiff.float16, 2e-3), "float32": (numdiff.float32, 2e-6), "float64": (numdiff.float64, 1e-13)}


def _python(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.vectorize(mixed, otypes=[np.float64])(x, y)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
    kinds=st.tuples(st.sampled_from([*DTYPES, "number"]), st.sampled_from([*DTYPES, "number"])),
    seed=st.integers(0, 2**16),
)
def test_broadcast_shapes_and_dtype_combinations_match_python_and_torch(shapes, kinds, seed):
    if kinds == ("number", "number"):
        kinds = ("float32", "number")
    rng = np.random.default_rng(seed)
    values = [rng.uniform(-2, 2, shape).round(2) for shape in shapes.input_shapes]
    args, leaves = [], []
    for value, kind in zip(values, kinds):
        if kind == "number":
            args.append(float(value.flat[0]) if value.size else 0.5)
            continue
        leaf = numdiff.tensor(value, dtype=DTYPES[kind][0], requires_grad=True)
        args.append(leaf)
        leaves.append(leaf)
    out = OP(*args)
    tensor_dtypes = [DTYPES[k][0] for k in kinds if k != "number"]
    expected_dtype = max(tensor_dtypes, key=lambda d: numdiff.tensor([], dtype=d).element_size())
    assert out.dtype == expected_dtype
    # The result is the Python function on the values each argument holds, rounded once.
    held = [a.detach().double().numpy() if isinstance(a, numdiff.Tensor) else np.float64(a) for a in args]
    x, y = np.broadcast_arrays(*held)
    assert out.shape == x.shape
    tolerance = DTYPES[str(expected_dtype).split(".")[-1]][1]
    np.testing.assert_allclose(out.detach().double().numpy(), _python(x, y), rtol=tolerance, atol=tolerance)
    out.sum().backward()
    _, (gx, gy) = torch_values_and_grads(mixed, x.ravel(), y.ravel())
    for a, g in zip(args, (gx, gy)):
        if isinstance(a, numdiff.Tensor):
            assert a.grad.dtype == a.dtype and a.grad.shape == a.shape
            summed = _sum_to(g.reshape(x.shape), a.shape)
            # The gradient is rounded to the input's dtype (a float16 input of a float32 result).
            grad_tolerance = 20 * max(tolerance, DTYPES[str(a.dtype).split(".")[-1]][1])
            np.testing.assert_allclose(a.grad.double().numpy(), summed, rtol=grad_tolerance, atol=grad_tolerance)


def _sum_to(array: np.ndarray, shape: tuple) -> np.ndarray:
    while array.ndim > len(shape):
        array = array.sum(0)
    for axis, size in enumerate(shape):
        if size == 1 and array.shape[axis] != 1:
            array = array.sum(axis, keepdims=True)
    return array


def test_non_contiguous_inputs_give_the_contiguous_result():
    base = numdiff.tensor(np.random.default_rng(0).uniform(-2, 2, (4, 6)), dtype=numdiff.float64)
    strided = [base.t(), base[:, ::2].t(), base[::2]]
    for view in strided:
        other = numdiff.tensor(np.linspace(-1, 1, view.shape[-1]), dtype=numdiff.float64)
        np.testing.assert_array_equal(OP(view, other).numpy(), OP(view.contiguous(), other).numpy())


def test_results_can_be_changed_in_place_and_still_differentiate():
    x = numdiff.tensor([-1.5, 0.25, 1.0], dtype=numdiff.float64, requires_grad=True)
    y = numdiff.tensor([0.5, 0.5, -2.0], dtype=numdiff.float64, requires_grad=True)
    out = OP(x, y)
    out.mul_(3.0)
    out.sum().backward()
    tx, ty = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (x, y))
    reference = torch.stack([_torch_mixed(a, b) for a, b in zip(tx, ty)]) * 3.0
    reference.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-13)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-13)


def _torch_mixed(x, y):
    if x > y:
        return torch.exp(-x * x) * y
    z = torch.sin(x) - y**2.0
    return z / (1.0 + torch.abs(y))


@pytest.mark.parametrize("create_graph", [False, True])
def test_an_input_changed_in_place_after_the_call_is_detected_or_not_used(create_graph):
    # torch raises at backward; numdiff must not silently use the changed values.
    x = numdiff.tensor([-1.5, 0.25, 1.0], dtype=numdiff.float64, requires_grad=True)
    y = numdiff.tensor([0.5, 0.5, -2.0], dtype=numdiff.float64)
    expected = numdiff.autograd.grad(OP(x * 1.0, y).sum(), x)[0].numpy()
    a = x * 1.0
    out = OP(a, y)
    with numdiff.no_grad():
        a.add_(10.0)
    try:
        (grad,) = numdiff.autograd.grad(out.sum(), x, create_graph=create_graph)
    except RuntimeError as error:
        assert "in-place" in str(error) or "inplace" in str(error) or "modified" in str(error)
    else:
        np.testing.assert_allclose(grad.detach().numpy(), expected, rtol=1e-13)
