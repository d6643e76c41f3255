"""Running sums and products along a dimension (cumsum, cumprod), and finite differences (diff).

cumsum and cumprod are primitives; diff is composed of slices and a subtraction.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numdiff._host_functions import host_function
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import is_grad_enabled
from numdiff.backend import backend_for, is_host
from numdiff.creation import arange
from numdiff.ops._util import batch_nondifferentiable, ensure_tensor, normalize_dim, vmapped
from numdiff.ops.indexing import gather
from numdiff.ops.joining import cat
from numdiff.ops.reduction import values_indices
from numdiff.ops.registry import register
from numdiff.ops.search import _host, _on_device_of
from numdiff.ops.selection import where
from numdiff.tensor import Tensor

_LANE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


@register("cumsum", compile="call", launchers=("cumsum_lanes",))
class Cumsum(Function):
    """out[..., j] = sum(x[..., :j + 1]) along `dim`, or with `reverse` sum(x[..., j:]); the
    gradient of either is the other (the running sum taken from the end)."""

    @staticmethod
    def forward(ctx, x, *, dim, reverse=False):
        ctx.dim, ctx.reverse = dim, reverse
        if x.dtype in _LANE_DTYPES:
            lanes = _lanes(x, dim)
            return backend_for(x).cumsum_lanes(lanes, np.empty_like(lanes), reverse).reshape(x.shape)
        if reverse:
            return np.flip(_running(np.cumsum, np.flip(x, dim), dim), dim)
        return _running(np.cumsum, x, dim)

    @staticmethod
    def backward(ctx, grad):
        return (Cumsum.apply(grad, dim=ctx.dim, reverse=not ctx.reverse),)


@register("cumprod", compile="eager_backward", launchers=("cumprod_lanes", "cumprod_backward_lanes"))
class Cumprod(Function):
    """out[..., j] = prod(x[..., :j + 1]) along `dim`.

    Gradient: dx[i] = sum_{j >= i} g[j] * prod_{k <= j, k != i} x[k], exact where x holds zeros
    (no division by x). First order runs it as the recurrence dx[i] = P[i] * S[i], with P the
    product of the elements before i and S[i] = g[i] + x[i + 1] * S[i + 1]: two passes over each
    lane in numdiff.kernels.scan (float32/float64; NumPy over the other dims for other dtypes). Under create_graph the same sum is built from ops (an
    n x n matrix per row, so O(n^2) memory) so that it is differentiable again.
    """

    @staticmethod
    def forward(ctx, x, *, dim):
        ctx.dim = dim
        ctx.save_for_backward(x)
        if x.dtype in _LANE_DTYPES:
            lanes = _lanes(x, dim)
            return backend_for(x).cumprod_lanes(lanes, np.empty_like(lanes)).reshape(x.shape)
        return _running(np.cumprod, x, dim)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if is_grad_enabled():
            return (_cumprod_grad_differentiable(x, grad, ctx.dim),)
        x, grad = x._data, grad._data
        if x.dtype in _LANE_DTYPES and grad.dtype == x.dtype and grad.shape == x.shape:
            lanes = _lanes(x, ctx.dim)
            out = backend_for(x).cumprod_backward_lanes(lanes, _lanes(grad, ctx.dim), np.empty_like(lanes))
            return (Tensor._wrap(out.reshape(x.shape), None, None),)
        return (Tensor._wrap(_cumprod_grad(x, grad, ctx.dim), None, None),)


def _lanes(x: Any, dim: int) -> Any:
    """x as a C-contiguous (outer, n, inner) array, n the length of `dim` (numdiff.kernels.scan's view)."""
    shape = x.shape
    return np.ascontiguousarray(x, like=x).reshape(math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1 :]))


def _running(scan: Any, x: Any, dim: int) -> Any:
    """np.cumsum or np.cumprod along dim; float16/float32 CPU arrays accumulate in float64 and
    round once per element, as PyTorch's CPU kernels do (NumPy would round at every step)."""
    if is_host(x) and x.dtype in (np.float16, np.float32):
        return scan(x, axis=dim, dtype=np.float64).astype(x.dtype)
    # Integers stay in x's dtype and wrap, as PyTorch's cumsum(dtype=int8); NumPy would widen them.
    return scan(x, axis=dim, dtype=x.dtype if x.dtype.kind in "iu" else None)


def _cumprod_grad(x: Any, grad: Any, dim: int) -> Any:
    x = np.moveaxis(x, dim, -1)
    grad = np.moveaxis(grad, dim, -1)
    n = x.shape[-1]
    out = np.empty(np.broadcast_shapes(x.shape, grad.shape), dtype=grad.dtype, like=grad)
    if out.size == 0:
        return np.moveaxis(out, -1, dim)
    ones = np.ones(x.shape[:-1] + (1,), dtype=x.dtype, like=x)
    before = np.cumprod(np.concatenate([ones, x[..., :-1]], axis=-1), axis=-1)
    running = grad[..., n - 1]
    out[..., n - 1] = running
    for i in range(n - 2, -1, -1):
        running = grad[..., i] + x[..., i + 1] * running
        out[..., i] = running
    out *= before
    return np.moveaxis(out, -1, dim)


def _cumprod_grad_differentiable(x: Tensor, grad: Tensor, dim: int) -> Tensor:
    moved = x.movedim(dim, -1)
    g = grad.movedim(dim, -1)
    n = moved.shape[-1]
    lead = tuple(moved.shape[:-1])
    rows = moved.unsqueeze(-2).expand(lead + (n, n))  # rows[..., i, k] = x[k]
    positions = arange(n, device=x.device)
    eye = positions.unsqueeze(0) == positions.unsqueeze(1)
    upper = positions.unsqueeze(0) >= positions.unsqueeze(1)  # upper[i, j]: j >= i
    # others[..., i, j] = prod_{k <= j, k != i} x[k]
    others = Cumprod.apply(where(eye, 1.0, rows), dim=moved.ndim)
    terms = where(upper, others * g.unsqueeze(-2), 0.0)
    return terms.sum(-1).movedim(-1, dim)


def _scan_input(op: str, input: Any, dim: Any, dtype: Any) -> tuple[Tensor, int]:
    input = ensure_tensor(op, input)
    if dim is None:
        raise TypeError(f"{op}: missing the required argument 'dim' (tensor of shape {tuple(input.shape)})")
    dim = normalize_dim(op, dim, input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    elif input._data.dtype.kind in "biu":
        input = input.long()  # PyTorch: integer and bool running sums/products are int64
    return input, dim


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sum along `dim`; integer and bool inputs give int64 unless `dtype` says otherwise.

    >>> numdiff.cumsum(numdiff.tensor([1.0, 2.0, 3.0]), dim=0)
    tensor([1., 3., 6.])
    """
    input, dim = _scan_input("cumsum", input, dim, dtype)
    if input.ndim == 0:
        return Cumsum.apply(input.reshape(1), dim=0).reshape(())
    return Cumsum.apply(input, dim=dim)


def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running product along `dim`; integer and bool inputs give int64 unless `dtype` says otherwise.

    >>> numdiff.cumprod(numdiff.tensor([1.0, 2.0, 3.0]), dim=0)
    tensor([1., 2., 6.])
    """
    input, dim = _scan_input("cumprod", input, dim, dtype)
    if input.ndim == 0:
        return Cumprod.apply(input.reshape(1), dim=0).reshape(())
    return Cumprod.apply(input, dim=dim)


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along `dim`, out[i] = x[i + 1] - x[i] applied n times, after
    joining `prepend` and `append` to the input along `dim`. Bool inputs give x[i + 1] != x[i].

    >>> numdiff.diff(numdiff.tensor([1.0, 4.0, 9.0]))
    tensor([3., 5.])
    """
    input = ensure_tensor("diff", input)
    if input.ndim == 0:
        raise RuntimeError("diff: expected at least a 1-dimensional tensor, got a 0-d tensor")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"diff: order must be a non-negative integer, got {n!r}")
    dim = normalize_dim("diff", dim, input.ndim)
    pieces = []
    for name, extra in (("prepend", prepend), ("input", input), ("append", append)):
        if extra is None:
            continue
        extra = ensure_tensor("diff", extra, name)
        if extra.ndim != input.ndim or any(a != b for d, (a, b) in enumerate(zip(extra.shape, input.shape)) if d != dim):
            raise ValueError(
                f"diff: {name} of shape {tuple(extra.shape)} must have the input's dimensions and match its "
                f"shape {tuple(input.shape)} except in dimension {dim}"
            )
        pieces.append(extra)
    x = cat(pieces, dim) if len(pieces) > 1 else input
    for _ in range(int(n)):
        length = x.shape[dim]
        if length == 0:
            break
        later = x.narrow(dim, 1, length - 1)
        earlier = x.narrow(dim, 0, length - 1)
        x = later != earlier if x._data.dtype.kind == "b" else later - earlier
    return x


def cummax(input: Tensor, dim: int) -> Any:
    """(values, indices): the running maximum along `dim` and where it was found (the latest
    position on ties; NaN propagates). The values are gathered at the indices, so the gradient
    goes to the element each running maximum came from.

    >>> numdiff.cummax(numdiff.tensor([1.0, 3.0, 2.0]), 0).indices
    tensor([0, 1, 1])
    """
    return _cumulative_extreme("cummax", input, dim)


def cummin(input: Tensor, dim: int) -> Any:
    """(values, indices): the running minimum along `dim` and where it was found (the latest
    position on ties; NaN propagates); gradient as for cummax.

    >>> numdiff.cummin(numdiff.tensor([3.0, 1.0, 2.0]), 0).values
    tensor([3., 1., 1.])
    """
    return _cumulative_extreme("cummin", input, dim)


def _cumulative_extreme(op: str, input: Tensor, dim: int) -> Any:
    input = ensure_tensor(op, input)
    dim = normalize_dim(op, dim, input.ndim)
    flat = input.reshape(1) if input.ndim == 0 else input
    indices = cumulative_extreme_indices(flat, op, dim)
    values = gather(flat, dim, indices)
    if input.ndim == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return values_indices(values, indices)


@host_function
def cumulative_extreme_indices(input: Tensor, op: str, dim: int) -> Tensor:
    """Where each running maximum (op "cummax") or minimum ("cummin") along `dim` was found:
    the latest position holding the running extreme, or the latest NaN once one was seen. Read
    on the host; numdiff.compile replays it as a host call."""
    if vmapped(input):  # the whole batch at once, its dim 0 in front
        return batch_nondifferentiable(lambda batch: cumulative_extreme_indices(batch, op, dim + 1), input)
    x = _host(op, input)
    running = (np.maximum if op == "cummax" else np.minimum).accumulate(x, axis=dim)
    hits = x == running
    if x.dtype.kind == "f":
        hits |= np.isnan(x)
    shape = [1] * x.ndim
    shape[dim] = x.shape[dim]
    positions = np.arange(x.shape[dim], dtype=np.int64).reshape(shape)
    found = np.maximum.accumulate(np.where(hits, positions, 0), axis=dim)
    return _on_device_of(np.ascontiguousarray(found, dtype=np.int64), input)
