"""Flatten parameters into one vector and write a vector back into parameters."""

from __future__ import annotations

from collections.abc import Iterable

from numdiff.autograd.grad_mode import no_grad
from numdiff.ops.joining import cat
from numdiff.tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated, in iteration order (differentiable)."""
    flat = [p.reshape(-1) for p in parameters]
    if not flat:
        raise ValueError("parameters_to_vector: got no parameters")
    return cat(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the 1-D `vec` into each parameter, in place."""
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise TypeError(f"vector_to_parameters: expected a 1-D Tensor, got {getattr(vec, 'shape', type(vec).__name__)}")
    parameters = list(parameters)
    needed = sum(p.numel() for p in parameters)
    if needed != vec.numel():
        raise ValueError(f"vector_to_parameters: the parameters hold {needed} values but the vector has {vec.numel()}")
    start = 0
    with no_grad():
        for p in parameters:
            p.copy_(vec[start : start + p.numel()].reshape(p.shape))
            start += p.numel()
