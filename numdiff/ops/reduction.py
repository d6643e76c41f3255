"""Reductions. sum, prod, amax and amin are primitives; the rest are composed from them."""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np

from numdiff._host_functions import host_function
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import is_grad_enabled
from numdiff.backend import backend_for, is_host
from numdiff.ops._util import (
    as_result,
    data_of,
    half_computed_in_float32,
    normalize_dim,
    normalize_dims,
    vmapped,
)
from numdiff.ops.indexing import gather
from numdiff.ops.registry import register
from numdiff.ops.selection import maximum, minimum, where
from numdiff.ops.shape import Expand, Reshape, _as_view
from numdiff.overrides import dispatch_call, honours_protocol, is_overridable
from numdiff.tensor import Tensor

values_indices = namedtuple("values_indices", ["values", "indices"])


def _expand_back(grad: Tensor, ctx) -> Tensor:
    """Undo a reduction's shape change: reinsert reduced dims as size 1, then broadcast."""
    if type(grad) is Tensor and not is_grad_enabled():
        # First order: the reshape and broadcast_to of the array that the reshape and expand ops
        # would make, without two op calls (12 of the 52 us of relu(x).sum().backward() on 32x16x8x8).
        data = grad._data if ctx.keepdim else grad._data.reshape(ctx.kept_shape)
        if data.shape == tuple(ctx.input_shape):
            return grad if data is grad._data else Tensor._wrap(data, None, None)
        return Tensor._wrap(np.broadcast_to(data, ctx.input_shape), None, None)
    # Recorded (create_graph): the view ops directly, without reshape()'s and expand()'s argument
    # checks (the shapes are the forward's). With the leading dims reduced and not kept, expand's
    # broadcast puts them back by itself: no reshape op (a bias gradient's sum(0), a full sum).
    if not ctx.keepdim and ctx.dims != tuple(range(len(ctx.dims))):
        kept = ctx.kept_shape
        grad = _as_view(Reshape.apply(grad, shape=kept), grad, Reshape, {"shape": kept})
    shape = tuple(ctx.input_shape)
    if grad._data.shape == shape:
        return grad
    return _as_view(Expand.apply(grad, shape=shape), grad, Expand, {"shape": shape})


def _remember(ctx, x, dims: tuple, keepdim: bool) -> None:
    shape = x.shape
    ctx.input_shape = shape
    ctx.dims = dims
    ctx.keepdim = keepdim
    if len(dims) == len(shape):  # every dim (x.sum(), x.mean()): no per-dim walk
        ctx.kept_shape = (1,) * len(shape)
    else:  # a list comprehension, not a generator: one frame fewer per call
        ctx.kept_shape = tuple([1 if i in dims else n for i, n in enumerate(shape)])


_KERNEL_SUM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def sums_by_kernel(dtype: Any, ndim: int, dims: tuple) -> bool:
    """Whether Sum's forward runs the backend's sum_dims launcher (else np.sum): some but not all
    axes summed, float32 or float64. numdiff.compile's direct plan reads this rule too, so a
    compiled sum runs eager's kernel and gives its numbers."""
    return bool(dims) and len(dims) != ndim and np.dtype(dtype) in _KERNEL_SUM_DTYPES


@register("sum", compile="call", launchers=("sum_dims",))
class Sum(Function):
    @staticmethod
    def forward(ctx, x, *, dims, keepdim):
        _remember(ctx, x, dims, keepdim)
        if not sums_by_kernel(x.dtype, x.ndim, dims):
            # np.sum is np.add.reduce behind a Python wrapper that looks for a .sum method and
            # builds keyword dicts: on a host array the ufunc directly gives the same sum (and the
            # same int64 for small integers) without the wrapper's 1-3 us.
            # An integer sum stays in x's dtype, wrapping as PyTorch's (sum(dtype=int8)); NumPy's
            # reduce would widen int8 to int64 (the default sum's integers are int64 already).
            dtype = x.dtype if x.dtype.kind in "iu" else None
            if is_host(x):
                return np.add.reduce(x, axis=dims, keepdims=keepdim, dtype=dtype)
            return np.sum(x, axis=dims, keepdims=keepdim, dtype=dtype)
        # One pass over x for interleaved or short innermost summed axes (a broadcast's gradient).
        # like= only off the host: its dispatch costs a small sum ~0.5 us.
        out = np.empty(ctx.kept_shape, x.dtype) if is_host(x) else np.empty(ctx.kept_shape, dtype=x.dtype, like=x)
        backend_for(x).sum_dims(x, dims, out)
        return out if keepdim else out.reshape([n for i, n in enumerate(x.shape) if i not in dims])

    @staticmethod
    def backward(ctx, grad):
        return (_expand_back(grad, ctx),)


@register("prod", compile="call")
class Prod(Function):
    """Product. Gradient: product of the others; exact where the input holds zeros too."""

    @staticmethod
    def forward(ctx, x, *, dims, keepdim):
        _remember(ctx, x, dims, keepdim)
        ctx.save_for_backward(x)
        # Integers stay in x's dtype and wrap, as Sum's (prod(dtype=int8)).
        return np.prod(x, axis=dims, keepdims=keepdim, dtype=x.dtype if x.dtype.kind in "iu" else None)

    @staticmethod
    def backward(ctx, grad):
        # The product of the others, computed directly rather than as out / x, so zeros need no
        # branch on the values (a traced or compiled backward cannot take one).
        (x,) = ctx.saved_tensors
        if is_grad_enabled():
            # create_graph=True: the product of the others must itself be differentiable.
            return (_expand_back(grad, ctx) * _product_of_others_differentiable(x, ctx.dims),)
        # One broadcast multiply of the arrays, without the expanded gradient as a tensor.
        others = _product_of_others(x._data, ctx.dims)
        return (Tensor._wrap(others * grad._data.reshape(ctx.kept_shape), None, None),)


def _product_of_others_differentiable(x: Tensor, dims: tuple) -> Tensor:
    """`_product_of_others` from numdiff ops, for double backward: each group of n elements becomes
    an n x n matrix whose row i is the group with element i replaced by 1, reduced with prod."""
    kept = [d for d in range(x.ndim) if d not in dims]
    moved = x.permute(kept + list(dims))
    lead = tuple(moved.shape[: len(kept)])
    n = int(np.prod([x.shape[d] for d in dims], dtype=np.int64))
    rows = moved.reshape(lead + (1, n)).expand(lead + (n, n))
    diagonal = Tensor._wrap(np.eye(n, dtype=np.bool_, like=x._data), None, None)
    others = where(diagonal, 1.0, rows).prod(-1).reshape(moved.shape)
    return others.permute(tuple(int(i) for i in np.argsort(kept + list(dims))))


def _product_of_others(x: np.ndarray, dims: tuple) -> np.ndarray:
    """For each element, the product of the other elements in its reduction group."""
    if x.size == 0:  # no elements, no products (the reshape below cannot infer -1 from 0)
        return np.zeros_like(x)
    moved = np.moveaxis(x, dims, tuple(range(x.ndim - len(dims), x.ndim)))
    flat = moved.reshape(moved.shape[: x.ndim - len(dims)] + (-1,))
    if is_host(flat):
        # Exclusive running products from both ends, written in place: no concatenated copies.
        result, after = np.empty_like(flat), np.empty_like(flat)
        result[..., 0] = 1
        np.cumprod(flat[..., :-1], axis=-1, out=result[..., 1:])
        after[..., -1] = 1
        np.cumprod(flat[..., :0:-1], axis=-1, out=after[..., -2::-1])
        result *= after
        return np.moveaxis(result.reshape(moved.shape), tuple(range(x.ndim - len(dims), x.ndim)), dims)
    ones = np.ones(flat.shape[:-1] + (1,), dtype=x.dtype, like=x)
    before = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    result = (before * after).reshape(moved.shape)
    return np.moveaxis(result, tuple(range(x.ndim - len(dims), x.ndim)), dims)


class _Extreme(Function):
    """amax/amin: gradient shared evenly among the elements that reach the extreme.

    A NaN extreme equals no element, so amax's gradient is NaN for its whole group, as
    PyTorch's is; with `nan_is_hit` (max() and min() of a whole tensor) the NaNs share it, as
    PyTorch's max() and min() do.
    """

    reduce = staticmethod(np.max)

    @classmethod
    def forward(cls, ctx, x, *, dims, keepdim, nan_is_hit=False):
        if x.size == 0:
            _refuse_empty_reduced_dim(cls.op_name, x.shape, dims)
        _remember(ctx, x, dims, keepdim)
        ctx.nan_is_hit = nan_is_hit
        out = cls.reduce(x, axis=dims, keepdims=keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        if not is_grad_enabled() and is_host(x._data) and is_host(grad._data):
            return (Tensor._wrap(_extreme_grad(x._data, out._data, grad._data, ctx), None, None),)
        out = _expand_back(out, ctx)
        hits = x == out
        if ctx.nan_is_hit:
            hits = hits | (x.isnan() & out.isnan())
        hits = hits.to(grad.dtype)
        count = hits.sum(dim=ctx.dims, keepdim=True) if ctx.dims else hits
        return (_expand_back(grad, ctx) * hits / count,)


def _extreme_grad(x: np.ndarray, out: np.ndarray, grad: np.ndarray, ctx) -> np.ndarray:
    """_Extreme's first-order gradient on host arrays: the recorded backward's arithmetic in NumPy,
    without its seven ops (tie counts are whole numbers, so any summation order gives their bits)."""
    if not ctx.keepdim:
        out, grad = out.reshape(ctx.kept_shape), grad.reshape(ctx.kept_shape)
    hits = x == out
    if ctx.nan_is_hit:
        hits |= np.isnan(x) & np.isnan(out)
    hits = hits.astype(grad.dtype)
    count = np.add.reduce(hits, axis=ctx.dims, keepdims=True) if ctx.dims else hits
    return np.asarray(np.broadcast_to(grad, ctx.input_shape) * hits / count)


def _refuse_empty_reduced_dim(op: str, shape: tuple, dims: tuple) -> None:
    """max/min have no identity, so reducing over a size-0 dim is an error; reducing a non-empty
    dim of a tensor that is empty elsewhere gives an empty result, as in PyTorch."""
    for d in range(len(shape)) if dims is None else dims:
        if shape[d] == 0:
            raise RuntimeError(
                f"{op}: cannot reduce over dim {d}, which has size 0 (input shape {tuple(shape)}): the "
                "operation has no identity"
            )


@register("amax", compile="call")
class Amax(_Extreme):
    reduce = staticmethod(np.max)


@register("amin", compile="call")
class Amin(_Extreme):
    reduce = staticmethod(np.min)


def _reduction_dims(op: str, dim: Any, ndim: int) -> tuple[int, ...]:
    """`normalize_dims`, except that an empty list of dims reduces every dim, as in PyTorch."""
    if dim is None:
        return _ALL_DIMS[ndim] if ndim < len(_ALL_DIMS) else tuple(range(ndim))
    if type(dim) is int and -ndim <= dim < ndim:  # one in-range int, the usual dim: no checks to run
        return (dim % ndim,)
    if not isinstance(dim, (int, np.integer)) and hasattr(dim, "__len__") and len(dim) == 0:
        dim = None
    return normalize_dims(op, dim, ndim)


_ALL_DIMS = tuple(tuple(range(n)) for n in range(9))  # dim=None's dims, by ndim


def _float_for_reduce(op: str, x: Tensor) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A001
    """Sum over `dim` (int, tuple, or all dims when None)."""
    if dtype is not None:
        input = input.to(dtype)
    elif input._data.dtype.kind != "f":  # a float input needs no int64 cast
        input = _integers_as_int64(input)
    return Sum.apply(input, dims=_reduction_dims("sum", dim, input.ndim), keepdim=keepdim)


def _integers_as_int64(input: Tensor) -> Tensor:
    """PyTorch sums and multiplies bool and every integer dtype in int64. NumPy would give uint8
    uint64, which numdiff does not hold, and int32 int32."""
    kind = input._data.dtype.kind
    return input.long() if kind == "b" or (kind in "iu" and input._data.dtype != np.int64) else input


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Product over one dim, or all elements (computed in `dtype` when given)."""
    input = _integers_as_int64(input) if dtype is None else input.to(dtype)
    dims = normalize_dims("prod", dim, input.ndim) if dim is not None else tuple(range(input.ndim))
    return Prod.apply(input, dims=dims, keepdim=keepdim if dim is not None else False)


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Maximum over `dim` (all dims when empty); ties share the gradient evenly."""
    dims = normalize_dims("amax", dim if dim != () else None, input.ndim)
    return Amax.apply(input, dims=dims, keepdim=keepdim)


def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Minimum over `dim` (all dims when empty); ties share the gradient evenly."""
    dims = normalize_dims("amin", dim if dim != () else None, input.ndim)
    return Amin.apply(input, dims=dims, keepdim=keepdim)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Arithmetic mean over `dim`."""
    if dtype is not None:
        input = input.to(dtype)
    if input._data.dtype.kind not in "fV":
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be floating point, got {input.dtype!r}"
        )
    dims = _reduction_dims("mean", dim, input.ndim)
    shape = input._data.shape
    count = math.prod([shape[d] for d in dims])
    # Sum.apply, not sum(): the dims are normalised already and a float input needs no int64 cast.
    return half_computed_in_float32(input, lambda x: Sum.apply(x, dims=dims, keepdim=keepdim) / count)


@host_function
def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first maximum (over the flattened tensor when dim is None); no gradient."""
    return _arg_extreme("argmax", np.argmax, input, dim, keepdim)


@host_function
def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first minimum (over the flattened tensor when dim is None); no gradient."""
    return _arg_extreme("argmin", np.argmin, input, dim, keepdim)


def _arg_extreme(op: str, fn, input: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    if vmapped(input):
        return getattr(input, op)(dim, keepdim)  # the batched tensor's own argmax/argmin
    data = data_of(input)
    if data.size == 0 and dim is None:
        raise RuntimeError(f"{op}: cannot take the {op} of an empty tensor of shape {tuple(data.shape)}")
    if dim is None:
        out = as_result(fn(data.reshape(-1))).astype(np.int64)
        if keepdim:
            out = out.reshape((1,) * data.ndim)
    else:
        axis = normalize_dim(op, dim, data.ndim)
        if data.size == 0:
            _refuse_empty_reduced_dim(op, data.shape, (axis,) if data.ndim else ())
        # as_result: reducing a 1-D array to 0-d gives a NumPy scalar, not an array.
        out = as_result(fn(data, axis=axis, keepdims=keepdim)).astype(np.int64) if data.ndim else np.zeros((), dtype=np.int64, like=data)
    return Tensor._wrap(out, None, None)


@honours_protocol
def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """max(x): the largest element; max(x, dim): (values, indices); max(x, other): maximum."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(max, locals())
    return _extreme("max", amax, argmax, input, dim, keepdim)


@honours_protocol
def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """min(x): the smallest element; min(x, dim): (values, indices); min(x, other): minimum."""
    if type(input) is not Tensor and is_overridable(input):  # a Proxy (numdiff.overrides)
        return dispatch_call(min, locals())
    return _extreme("min", amin, argmin, input, dim, keepdim)


def _extreme(op: str, full, arg, input: Tensor, dim: Any, keepdim: bool) -> Any:
    if isinstance(dim, Tensor):
        return (maximum if op == "max" else minimum)(input, dim)
    if dim is None:
        if not isinstance(input, Tensor):
            return full(input)  # amax's own message
        return (Amax if op == "max" else Amin).apply(input, dims=tuple(range(input.ndim)), keepdim=False, nan_is_hit=True)
    axis = normalize_dim(op, dim, input.ndim)
    indices = arg(input, axis, keepdim=True)
    values = gather(input, axis, indices) if input.ndim else input
    if not keepdim and input.ndim:
        values, indices = values.squeeze(axis), indices.squeeze(axis)
    return values_indices(values, indices)
