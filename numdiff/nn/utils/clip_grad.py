"""Gradient clipping: rescale gradients in place by their total norm, or clamp each value."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

import numpy as np

from numdiff._host_functions import host_function
from numdiff.autograd.grad_mode import no_grad
from numdiff.backend import is_host
from numdiff.creation import tensor
from numdiff.kernels._checks import FLOAT_DTYPES
from numdiff.kernels.sum_squares import sum_of_squares
from numdiff.ops._util import vmapped
from numdiff.ops.joining import stack
from numdiff.tensor import Tensor


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _values_of(grad: Tensor) -> Tensor:
    """The tensor whose norm is the gradient's: itself, or a sparse gradient's values once
    duplicate rows are summed (PyTorch's clip_grad_norm_ refuses sparse gradients instead)."""
    return grad if isinstance(grad, Tensor) else grad.coalesce()._value_tensor


@host_function
def _squared_norm(t: Tensor) -> Tensor:
    """0-d float64: the sum of the squares of a host float tensor's elements, in one pass
    (numdiff.kernels.sum_squares); numdiff.compile replays it as a host step."""
    return Tensor._wrap(np.asarray(sum_of_squares(t._data)), None, None)


def _norm(t: Tensor, norm_type: float) -> Tensor:
    if norm_type == 2:
        if is_host(t._data) and t._data.dtype in FLOAT_DTYPES and not vmapped(t):
            return _squared_norm(t).sqrt().to(t.dtype)  # the root taken in float64, rounded once
        return (t * t).sum().sqrt()  # x * x is |x| * |x| exactly: no pass for the magnitudes
    magnitudes = t.abs()
    if norm_type == math.inf:
        return magnitudes.amax() if t.numel() else magnitudes.sum()
    if norm_type == -math.inf:
        return magnitudes.amin()
    if norm_type == 0:
        return (magnitudes != 0).to(t.dtype).sum()
    if norm_type == 1:
        return magnitudes.sum()
    return magnitudes.pow(norm_type).sum().pow(1.0 / norm_type)


def get_total_norm(
    tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach: bool | None = None
) -> Tensor:
    """The norm of `tensors` taken together, as if concatenated into one vector (0-d; 0.0 for none).

    >>> get_total_norm([p.grad for p in model.parameters() if p.grad is not None])
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        norms = stack([_norm(_values_of(t).detach(), norm_type).to(tensors[0].dtype) for t in tensors])
        total = _norm(norms, norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is {total.item()}, "
            "so they cannot be clipped; pass error_if_nonfinite=False to clip anyway"
        )
    return total


def clip_grads_with_norm_(
    parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor, foreach: bool | None = None
) -> None:
    """Scale all gradients by min(1, max_norm / (total_norm + 1e-6)), in place, for a `total_norm`
    computed before (by :func:`get_total_norm`, or summed over ranks)."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        factor = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(factor.to(g.dtype))


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale all gradients by min(1, max_norm / (total_norm + 1e-6)), in place; returns the total norm.

    The total norm is that of all gradients concatenated into one vector; `norm_type` may be inf.

    >>> total = clip_grad_norm_(model.parameters(), max_norm=1.0)
    """
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)  # read twice below
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient element to [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """clip_grad_norm_ under its deprecated name (PyTorch warns and clips)."""
    warnings.warn("nn.utils.clip_grad_norm is now deprecated in favor of nn.utils.clip_grad_norm_.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)
