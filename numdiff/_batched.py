"""Batched tensors for vmap: a per-example (logical) view over an array that carries the batch.

A `BatchedTensor` of vmap level L wraps a `value` tensor whose dim 0 is that level's batch; the
wrapper reports the logical shape (the value's shape without dim 0), so code written for one
example (shape checks, dims, composite functions such as softmax or cross_entropy) runs unchanged.
Its own ``_data`` is the first example's view, for shape, dtype and device reads only: the array
maths of every op goes through Function.apply, and the few Tensor methods that compute on arrays
directly (comparisons, logical ops, isfinite, argmax) are overridden here to batch.

Every op reaches `batched_apply` through a `VmapLevel`, the interpreter vmap pushes for each of
its levels (numdiff.autograd.transform_state), which picks the op's batching rule from
its spec (``cls.spec.batching``, attached by numdiff.func._batch_rules) and runs it on the values. The tape only ever records
the values, so backward (and numdiff.func.grad inside vmap) works on whole batches at once.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff._host_functions import ELEMENTWISE
from numdiff.autograd.transform_state import Interpreter, transforms
from numdiff.ops._util import normalize_dim
from numdiff.ops.shape import _as_view, stack
from numdiff.tensor import Tensor


class VmapPerformanceWarning(UserWarning):
    """An op without a batching rule ran once per batch entry in a Python loop."""


class VmapDataDependentError(RuntimeError):
    """A batched tensor's values were read as Python data (item, bool, numpy) inside vmap."""


class VmapRandomnessError(RuntimeError):
    """A random op ran inside vmap(randomness='error')."""


class VmapLevel(Interpreter):
    """The interpreter of one vmap level: ops go to their batching rules (`batched_apply`), and a
    random draw is refused under randomness='error' (at this level or an outer one)."""

    def __init__(self, randomness: str, level: int = 0) -> None:
        self.randomness = randomness
        self.level = level

    def apply(self, cls: Any, inputs: tuple, attrs: dict) -> Tensor:
        if getattr(self.parent, "sees_vmap_levels_below", False):
            # A jvp level sits between this level and the vmap levels below: an op batched only at
            # those goes to it first, so that nesting follows the order of the stack.
            for t in inputs:
                if type(t) is BatchedTensor and t._level == self.level:
                    return batched_apply(cls, inputs, attrs)
            return super().apply(cls, inputs, attrs)
        return batched_apply(cls, inputs, attrs)

    def host_call(self, function: Any, args: tuple, kwargs: dict) -> Any:
        """An elementwise host function with a batched operand runs once on the whole batches
        (again through the door for operands batched at outer levels); others run as written."""
        public = ELEMENTWISE.get(function)
        if public is not None and any(type(a) is BatchedTensor for a in args):
            return nondifferentiable(lambda *operands: public(*operands, **kwargs), *args)
        return super().host_call(function, args, kwargs)

    def draw(self, generator: Any) -> None:
        if self.randomness == "error":
            raise VmapRandomnessError(
                "vmap: a random op ran inside vmap(randomness='error'); pass randomness='different' for "
                "an independent draw per batch entry, or 'same' for one draw shared by the whole batch"
            )
        super().draw(generator)


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


def _plain_apply(cls: Any, inputs: tuple, attrs: dict) -> Tensor:
    """An op none of whose inputs is batched: run by the interpreter below every vmap level."""
    state = transforms
    top = state.interpreter
    depth = state.vmap_depth
    below = top
    while type(below) is VmapLevel:
        below = below.parent
    state.interpreter = below
    state.vmap_depth = 0
    try:
        return cls.apply(*inputs, **attrs)
    finally:
        state.interpreter = top
        state.vmap_depth = depth


def batched_apply(cls: Any, inputs: tuple, attrs: dict) -> Tensor:
    """Function.apply under vmap: run the op's batching rule (its spec's, attached by
    numdiff.func._batch_rules) for the innermost batched level."""
    level = 0
    for t in inputs:
        if type(t) is BatchedTensor and t._level > level:
            level = t._level
    if level == 0:
        return _plain_apply(cls, inputs, attrs)
    values = []
    batched = []
    for t in inputs:
        value, is_batched = unwrap_level(t, level)
        values.append(value)
        batched.append(is_batched)
    size = transforms.batch_sizes[level - 1]
    spec = getattr(cls, "spec", None)
    rule = None if spec is None else spec.batching
    out = None if rule is None else rule(cls, values, batched, attrs, size)
    if out is None and getattr(cls, "vmap", None) is not None:
        return _custom_vmap(cls, values, batched, attrs, size, level)
    if out is None:
        out = _loop(cls, values, batched, attrs, size)
        if isinstance(out, tuple):  # a custom Function with several outputs
            return tuple(wrap(o, level) if isinstance(o, Tensor) else o for o in out)
    elif spec.view and batched[0]:
        # The public function makes the logical result a view of its input; the batch (the
        # physical tensor an in-place op writes) must be one too, sharing its version counter,
        # so a write into the base is seen by whatever saved the view for backward.
        _as_view(out, values[0])
    return wrap(out, level)


_warned_ops: set[str] = set()


def _warn_loop(name: str, stacklevel: int) -> None:
    if name not in _warned_ops:
        _warned_ops.add(name)
        warnings.warn(
            f"vmap: op {name!r} has no batching rule; it runs once per batch entry in a Python loop",
            VmapPerformanceWarning,
            stacklevel=stacklevel + 1,
        )


def _each_example(call: Callable[..., Tensor], values: list, batched: list, size: int) -> Tensor:
    """``call`` once per batch entry (a batched value sliced at it), the results stacked. An empty
    batch makes one call on zeros of an example's shape, for the result's shape, and keeps none."""
    if size == 0:
        # Zeros (a valid index) summed out of the empty batch dim, still batched at outer levels.
        stand_in = [v.sum(0).to(v.dtype) if b else v for v, b in zip(values, batched)]
        return stack([call(*stand_in)])[:0]
    results = [call(*(v[index] if b else v for v, b in zip(values, batched))) for index in range(size)]
    if isinstance(results[0], tuple):  # several outputs: each tensor output stacked on its own
        return tuple(
            stack([r[k] for r in results]) if isinstance(first, Tensor) else first for k, first in enumerate(results[0])
        )
    return stack(results)


class VmapInfo:
    """What a custom Function's ``vmap`` staticmethod is told about the vmap (torch.func's info)."""

    def __init__(self, batch_size: int, randomness: str) -> None:
        self.batch_size = batch_size
        self.randomness = randomness


def _custom_vmap(cls: Any, values: list, batched: list, attrs: dict, size: int, level: int) -> Any:
    """A custom Function's own batching rule: ``cls.vmap(info, in_dims, *args)`` gets the inputs
    with the batch at dim 0 (in_dims 0) or unbatched (None), and returns ``(outputs, out_dims)``."""
    info = VmapInfo(size, transforms.randomness[level - 1] if len(transforms.randomness) >= level else "error")
    in_dims = tuple(0 if b else None for b in batched)
    result = cls.vmap(info, in_dims, *values, **attrs)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise TypeError(
            f"{cls.__name__}.vmap must return a pair (outputs, out_dims), got {type(result).__name__}"
        )
    outputs, out_dims = result
    several = isinstance(outputs, tuple)
    outputs = outputs if several else (outputs,)
    out_dims = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(outputs)
    if len(out_dims) != len(outputs):
        raise ValueError(f"{cls.__name__}.vmap returned {len(outputs)} outputs but {len(out_dims)} out_dims")
    wrapped = []
    for out, dim in zip(outputs, out_dims):
        if not isinstance(out, Tensor):
            wrapped.append(out)
            continue
        if dim is None:
            out = out.unsqueeze(0).expand(size, *out.shape)
        elif not isinstance(dim, int) or not -out.ndim <= dim < out.ndim or out.shape[dim] != size:
            raise ValueError(
                f"{cls.__name__}.vmap: out_dim {dim!r} is not a dimension of size {size} (the batch) of "
                f"its output of shape {tuple(out.shape)}"
            )
        else:
            out = out.movedim(dim, 0)
        wrapped.append(wrap(out, level))
    return tuple(wrapped) if several else wrapped[0]


def _loop(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    """The fallback: the op once per batch entry, results stacked (correct, not fast)."""
    _warn_loop(getattr(cls, "op_name", cls.__name__), 4)
    return _each_example(lambda *args: cls.apply(*args, **attrs), values, batched, size)


def per_example(name: str, fn: Callable[..., Tensor], *operands: Any) -> Tensor:
    """``fn(*operands)`` one example at a time of the innermost vmap level an operand is batched at,
    the results stacked: for a public op that reads an operand's values on the host (an index
    tensor, class labels), which for a batched tensor would be its first example only. Each call
    sees that example's operands (still batched at the outer levels, which recurse here)."""
    _warn_loop(name, 3)
    level = max(level_of(t) for t in operands)
    values, batched = zip(*(unwrap_level(t, level) for t in operands))
    shapes = set()

    def call(*args: Any) -> Tensor:
        result = fn(*args)
        shapes.add(tuple(result.shape))
        if len(shapes) > 1:
            raise VmapDataDependentError(
                f"vmap: {name} gives results of different shapes {sorted(shapes)} for the batch entries "
                "(the shape depends on the values); vmap needs one shape for every entry"
            )
        return result

    return wrap(_each_example(call, list(values), list(batched), transforms.batch_sizes[level - 1]), level)
