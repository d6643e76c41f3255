"""Batched tensors for vmap: a per-example (logical) view over an array that carries the batch.

A `BatchedTensor` of vmap level L wraps a `value` tensor whose dim 0 is that level's batch; the
wrapper reports the logical shape (the value's shape without dim 0), so code written for one
example (shape checks, dims, composite functions such as softmax or cross_entropy) runs unchanged.
Its own ``_data`` is the first example's view, for shape, dtype and device reads only: the array
maths of every op goes through Function.apply, and the few Tensor methods that compute on arrays
directly (comparisons, logical ops, isfinite, argmax) are overridden here to batch.

Every op reaches `batched_apply` (numdiff._vmap_level) through a `VmapLevel`, the interpreter
vmap pushes for each of its levels (numdiff.autograd.transform_state), which picks the op's
batching rule from its spec (``cls.spec.batching``, attached by numdiff.func._batch_rules) and runs
it on the values. The tape only ever records the values, so backward (and numdiff.func.grad inside
vmap) works on whole batches at once. This module holds the batched tensor and the moves between
logical and physical layouts.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff.autograd.transform_state import transforms
from numdiff.ops._util import normalize_dim
from numdiff.tensor import Tensor


class VmapPerformanceWarning(UserWarning):
    """An op without a batching rule ran once per batch entry in a Python loop."""


class VmapDataDependentError(RuntimeError):
    """A batched tensor's values were read as Python data (item, bool, numpy) inside vmap."""


class VmapRandomnessError(RuntimeError):
    """A random op ran inside vmap(randomness='error')."""


def logical_view(value: Tensor) -> Any:
    """The first example's view: a plain array, since ops tell devices apart by its type.

    Indexed with ``(0, ...)`` so a logical 0-d value stays a 0-d array, not a NumPy scalar. An
    empty batch has no first example: zeros of the logical shape stand in for it."""
    data = value._data
    if data.shape[0] == 0:
        return np.zeros(data.shape[1:], dtype=data.dtype, like=data)
    return data[0, ...]


class BatchedTensor(Tensor):
    """A tensor inside vmap: logical shape outside, batch dim 0 of `_value` inside."""

    __slots__ = ("_value", "_level")
    __hash__ = Tensor.__hash__

    def __repr__(self) -> str:
        return f"BatchedTensor(level={self._level}, logical shape={tuple(self.shape)}, value={self._value!r})"

    def _raise_data_dependent(self, what: str) -> Any:
        raise VmapDataDependentError(
            f"vmap: {what} of a batched tensor of logical shape {tuple(self.shape)} would depend on "
            "the batch entry; data-dependent Python control flow is not supported inside vmap."
        )

    def item(self) -> Any:
        return self._raise_data_dependent("item()")

    def tolist(self) -> Any:
        return self._raise_data_dependent("tolist()")

    def numpy(self) -> Any:
        return self._raise_data_dependent("numpy()")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self._raise_data_dependent("conversion to a NumPy array")

    def __bool__(self) -> bool:
        return self._raise_data_dependent("bool()")

    def __float__(self) -> float:
        return self._raise_data_dependent("float()")

    def __int__(self) -> int:
        return self._raise_data_dependent("int()")

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        raise RuntimeError(
            "vmap: requires_grad_() on a batched tensor is not supported; differentiate inside vmap "
            "with numdiff.func.grad / vjp instead."
        )

    def detach(self) -> Tensor:
        return wrap(self._value.detach(), self._level)

    # Comparisons, logical ops and argmax compute on arrays outside Function.apply, so they batch here.
    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return nondifferentiable(operator.eq, self, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return nondifferentiable(operator.ne, self, other)

    def __lt__(self, other: Any) -> Tensor:
        return nondifferentiable(operator.lt, self, other)

    def __le__(self, other: Any) -> Tensor:
        return nondifferentiable(operator.le, self, other)

    def __gt__(self, other: Any) -> Tensor:
        return nondifferentiable(operator.gt, self, other)

    def __ge__(self, other: Any) -> Tensor:
        return nondifferentiable(operator.ge, self, other)

    def __and__(self, other: Any) -> Tensor:
        return nondifferentiable(operator.and_, self, other)

    def __or__(self, other: Any) -> Tensor:
        return nondifferentiable(operator.or_, self, other)

    def __xor__(self, other: Any) -> Tensor:
        return nondifferentiable(operator.xor, self, other)

    def __invert__(self) -> Tensor:
        return nondifferentiable(operator.invert, self)

    def logical_not(self) -> Tensor:
        return nondifferentiable(lambda v: v.logical_not(), self)

    def isfinite(self) -> Tensor:
        return nondifferentiable(lambda v: v.isfinite(), self)

    def isnan(self) -> Tensor:
        return nondifferentiable(lambda v: v.isnan(), self)

    def isinf(self) -> Tensor:
        return nondifferentiable(lambda v: v.isinf(), self)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return _arg_extreme("argmax", self, dim, keepdim)

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return _arg_extreme("argmin", self, dim, keepdim)


def wrap(value: Tensor, level: int) -> BatchedTensor:
    """`value` (batch at dim 0) as a BatchedTensor of vmap `level`."""
    t = BatchedTensor._wrap(logical_view(value), None, None)
    t._value = value
    t._level = level
    return t


def level_of(t: Any) -> int:
    return t._level if type(t) is BatchedTensor else 0


def unwrap_level(t: Any, level: int) -> tuple[Any, bool]:
    """(value, batched): the value with batch dim 0 if `t` is batched at `level`, else `t` itself."""
    if type(t) is BatchedTensor and t._level == level:
        return t._value, True
    return t, False


def logical_ndim(value: Any, batched: bool) -> int:
    if not isinstance(value, Tensor):
        return 0
    return value.ndim - 1 if batched else value.ndim


def align(values: list, batched: list) -> list:
    """Batched values padded with size-1 dims after the batch dim to the highest logical rank, so
    NumPy's right-aligned broadcasting pairs logical dims with logical dims."""
    rank = max(logical_ndim(v, b) for v, b in zip(values, batched))
    aligned = []
    for value, is_batched in zip(values, batched):
        missing = rank - logical_ndim(value, is_batched)
        if is_batched and missing:
            shape = tuple(value.shape)
            value = value.reshape(shape[:1] + (1,) * missing + shape[1:])
        aligned.append(value)
    return aligned


def nondifferentiable(compute: Callable[..., Tensor], *operands: Any) -> Tensor:
    level = max(level_of(t) for t in operands)
    values, batched = zip(*(unwrap_level(t, level) for t in operands))
    return wrap(compute(*align(list(values), list(batched))), level)


def _arg_extreme(op: str, t: BatchedTensor, dim: int | None, keepdim: bool) -> Tensor:
    value = t._value
    if dim is None:
        out = getattr(value.reshape(value.shape[0], -1), op)(1)
        if keepdim:
            out = out.reshape((value.shape[0],) + (1,) * t.ndim)
    else:
        out = getattr(value, op)(normalize_dim(op, dim, t.ndim) + 1, keepdim)
    return wrap(out, t._level)


def physical(t: Tensor) -> tuple[Tensor, list[int]]:
    """The innermost array-holding tensor and the levels around it, outermost first."""
    levels = []
    while type(t) is BatchedTensor:
        levels.append(t._level)
        t = t._value
    return t, levels


def rewrap(value: Tensor, levels: list[int]) -> Tensor:
    """Inverse of `physical`."""
    for level in reversed(levels):
        value = wrap(value, level)
    return value


def physical_layout(value: Tensor, like: Tensor, refuse: Callable[[], Any]) -> Tensor:
    """`value` as a plain tensor laid out as `like`'s physical tensor (`like`'s batch dims, then the
    logical dims), broadcast over the levels `like` is batched at and `value` is not. Calls
    `refuse` (which raises) where `value` is batched at a level `like` is not."""
    while type(like) is BatchedTensor:
        level = like._level
        if level_of(value) > level:
            refuse()
        inner, is_batched = unwrap_level(value, level)
        if not is_batched:
            inner = value.unsqueeze(0).expand(transforms.batch_sizes[level - 1], *value.shape)
        value, like = inner, like._value
    if type(value) is not Tensor:
        refuse()
    return value


def promote(t: Tensor, levels: list[int] | None = None) -> Tensor:
    """`t` batched at every active vmap level, or at `levels` (ascending, a superset of those `t`
    is batched at), missing levels broadcast, as a BatchedTensor chain.

    Physical dims are the batch dims in ascending level order, then the logical dims.
    """
    targets = list(range(1, transforms.vmap_depth + 1)) if levels is None else levels
    value, present = physical(t)
    if present == targets[::-1]:
        return t
    for position, level in enumerate(targets):
        if level not in present:
            value = value.unsqueeze(position)
    value = value.expand(*(transforms.batch_sizes[level - 1] for level in targets), *t.shape)
    return rewrap(value, targets[::-1])
