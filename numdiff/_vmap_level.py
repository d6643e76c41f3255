"""vmap's interpreter level and how it applies an op: the op's batching rule, a custom Function's
own ``vmap``, or, for ops without either, the op once per batch entry (with a warning).

numdiff._batched holds the batched tensor these run on.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from numdiff._batched import (
    BatchedTensor,
    VmapDataDependentError,
    VmapPerformanceWarning,
    VmapRandomnessError,
    level_of,
    nondifferentiable,
    unwrap_level,
    wrap,
)
from numdiff._host_functions import ELEMENTWISE
from numdiff.autograd.transform_state import Interpreter, transforms
from numdiff.ops.joining import stack
from numdiff.ops.shape import _as_view
from numdiff.tensor import Tensor


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
