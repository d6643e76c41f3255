"""In-place ops: write a result into a tensor's own storage and bump its version counter.

With autograd recording, the op is computed out of place on an alias of the old value and the
tensor takes over the new node as its grad_fn (PyTorch's "rebase"). If the op saved the old value
for backward, a snapshot is saved instead, since the storage is about to be overwritten.

Inside numdiff.func.vmap an in-place op on a batched tensor writes its whole batch (the physical
tensor under the BatchedTensor), as torch.func does; a tensor that is not batched refuses a value
that is, since it cannot hold one value per batch entry.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff import _batched, _dtype, _profiling
from numdiff.autograd.grad_mode import _state
from numdiff.autograd.transform_state import anywhere, transforms
from numdiff.backend import is_host
from numdiff.tensor import InPlaceOnLeafError, Tensor


class InPlaceOnViewError(RuntimeError):
    """An in-place op with autograd recording targeted a view of another tensor."""


class TransformMutationError(RuntimeError):
    """A function under a numdiff.func transform changed a captured tensor in place."""


def _refuse_captured_mutation(op: str, target: Tensor, why: str) -> None:
    raise TransformMutationError(
        f"{op}: a function under a numdiff.func transform modifies in place a tensor of shape "
        f"{tuple(target.shape)} and dtype {target.dtype} {why}"
    )


_NOT_BATCHED = (
    "that is not batched at every vmap level the value written is batched at (a captured tensor, "
    "or one made inside without the batched inputs), so it cannot hold one value per batch entry; "
    "use the out-of-place op (y = c + x instead of c.add_(x))"
)


def apply_inplace(self: Tensor, op: str, compute: Callable[[Tensor], Tensor]) -> Tensor:
    """Run ``compute(old_value)`` and store its result in `self`'s storage. This thread's
    innermost interpreter may refuse the update or take it over first (numdiff.compile)."""
    if anywhere.levels:
        top = transforms.interpreter
        if top is not None:
            taken = top.inplace(self, op, compute)
            if taken is not None:
                return taken
        if transforms.vmap_depth and type(self) is not Tensor:
            return _apply_inplace_batched(self, op, compute)
    return run_inplace(self, op, compute)


def inplace_method(op: str, fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The Tensor method `op` (``x.exp_()``): ``fn(x, *args)`` computed and written into x in place."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return apply_inplace(self, op, lambda old: fn(old, *args, **kwargs))

    method.__name__ = method.__qualname__ = op
    method.__doc__ = f"In-place version of {getattr(fn, '__name__', op.rstrip('_'))}."
    return method


def arithmetic_inplace_method(op: str, fn: Callable[..., Tensor], ufunc: Any,
                              multiply: Callable[..., Tensor] | None = None) -> Callable[..., Tensor]:
    """The in-place arithmetic method `op` (``p -= lr * g``, ``p.data.add_(g, alpha=-lr)``,
    ``g.mul_(clip_factor)``): on untracked float host tensors of one dtype, `other`'s shape
    broadcasting to self's, ``ufunc`` writes straight into self's storage (PyTorch's one pass)
    instead of computing a new tensor and copying it back. An `alpha`
    (add and sub: pass `multiply`, numdiff's mul) scales `other` first, as `fn` does, so the
    rounding is the same. Any other call runs ``fn`` out of place (:func:`inplace_method`)."""
    general = inplace_method(op, fn)

    def method(self: Tensor, other: Any, **kwargs: Any) -> Tensor:
        if (
            type(other) is Tensor
            and (not kwargs or (multiply is not None and len(kwargs) == 1 and "alpha" in kwargs))
            and _profiling.recorder is None
            and records_nothing(self, other)
            and is_host(other._data)
            and self._data.dtype in _FLOATS
            and other._data.dtype is self._data.dtype
            and _broadcasts_into(other._data.shape, self._data.shape)
            and self._data.flags.writeable
        ):
            alpha = kwargs.get("alpha", 1)
            source = other._data if alpha == 1 else multiply(other, alpha)._data
            ufunc(self._data, source, out=self._data)
            self._version_counter[0] += 1
            return self
        return general(self, other, **kwargs)

    method.__name__ = method.__qualname__ = op
    method.__doc__ = general.__doc__
    return method


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _broadcasts_into(shape: tuple, target: tuple) -> bool:
    """Whether an operand of `shape` broadcasts to `target` without growing it (a 0-d factor, a row)."""
    if shape == target or not shape:
        return True
    if len(shape) > len(target):
        return False
    return all(n == 1 or n == m for n, m in zip(shape, target[len(target) - len(shape):]))


def zero_inplace_method(fn: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    """``zero_``: on a tensor nothing tracks (:func:`records_nothing`), zeros written straight into
    the storage; else ``fn`` (zeros computed out of place) through :func:`inplace_method`."""
    general = inplace_method("zero_", fn)

    def zero_(self: Tensor) -> Tensor:
        if records_nothing(self, None) and self._data.dtype.kind in "biufc":
            # p.grad.zero_() in a hand-written training loop: not a zero copy computed and then
            # written back (13x PyTorch's time for two layer gradients).
            return write_at(self, "zero_", Ellipsis, np.zeros((), self._data.dtype))
        return general(self)

    zero_.__doc__ = general.__doc__
    return zero_


def run_inplace(self: Tensor, op: str, compute: Callable[[Tensor], Tensor]) -> Tensor:
    """The update itself, at the current level (an interpreter that takes it over calls this)."""
    _refuse_inplace_on_leaf(self, op, tuple(self.shape))
    if _state.enabled and self._base is not None and self._base._requires_grad:
        _refuse_inplace_on_view_of_tracked_base(self, op)
    alias = Tensor._wrap(self._data, self._grad_fn, self._version_counter)
    alias._requires_grad = self._requires_grad
    out = compute(alias)
    if anywhere.levels and transforms.vmap_depth and type(out) is not Tensor:
        _refuse_captured_mutation(op, self, _NOT_BATCHED)
    return _store(self, op, out, alias)


def _apply_inplace_batched(self: Tensor, op: str, compute: Callable[[Tensor], Tensor]) -> Tensor:
    """An in-place op on a tensor batched by vmap: the result, batched over at most the levels
    `self` is (broadcast over the others), is written into the whole batch at once.

    compute gets a copy of the old batch rather than an alias of it: the ops it runs may save a
    reshaped or broadcast view of their input for backward, which the write would overwrite."""
    target, levels = _batched.physical(self)
    _refuse_inplace_on_leaf(target, op, tuple(self.shape))
    if _state.enabled and target._base is not None and target._base._requires_grad:
        _refuse_inplace_on_view_of_tracked_base(target, op)
    old = Tensor._wrap(target._data.copy(), target._grad_fn, None)
    old._requires_grad = target._requires_grad
    out = compute(_batched.rewrap(old, levels))
    written = _batched.physical_layout(out, self, lambda: _refuse_captured_mutation(op, self, _NOT_BATCHED))
    # A view made under vmap is a view of its base's batch, but only the BatchedTensor records that.
    _store(target, op, written, None, view_shape=tuple(self.shape) if self._base is not None else None)
    return self


def records_nothing(self: Tensor, value: Any) -> bool:
    """Whether writing `value` into `self` records nothing and no interpreter needs to see it: no
    transform or compile level is active, self's storage is on the host, and grad mode is off or
    neither side (nor self's base, when self is a view) requires grad. Such a write may go straight
    into the storage (:func:`write_at`)."""
    if anywhere.levels or not is_host(self._data):
        return False
    if not _state.enabled:
        return True
    base = self._base
    return not (
        self._requires_grad or getattr(value, "_requires_grad", False) or (base is not None and base._requires_grad)
    )


def write_at(self: Tensor, op: str, key: tuple, source: Any) -> Tensor:
    """``self[key] = source`` straight into self's storage, for a write that records nothing
    (:func:`records_nothing`): the cost of the elements written, not of a copy of the whole tensor.
    :func:`_store` writes a whole result through it too."""
    if is_host(self._data) and not self._data.flags.writeable:  # device arrays are writeable
        _refuse_read_only(self, op)
    if source.dtype != self._data.dtype and _dtype.BFLOAT16_STORAGE in (source.dtype, self._data.dtype):
        source = _dtype.cast_array(source, _dtype.from_numpy(self._data.dtype))  # NumPy would copy bits, not values
    self._data[key] = source
    self._version_counter[0] += 1
    return self


def _refuse_inplace_on_leaf(self: Tensor, op: str, shape: tuple) -> None:
    if _state.enabled and self._grad_fn is None and self._requires_grad:
        raise InPlaceOnLeafError(
            f"{op}: a leaf tensor of shape {shape} that requires grad is being used in "
            "an in-place operation. Update it inside `with numdiff.no_grad():` (as optimizers do), "
            "or use an out-of-place op (w = w - lr * g makes a new, non-leaf tensor)."
        )


def _store(self: Tensor, op: str, out: Tensor, alias: Tensor | None, view_shape: tuple | None = None) -> Tensor:
    """Write `out` (computed from `alias`, an alias of self's old value, or from a copy when
    None) into `self`'s storage, and rebase self onto out's node. `view_shape`: self is a view
    of another tensor though it has no `_base` of its own (the logical shape of that view)."""
    if anywhere.levels and transforms.grad_depth and out._requires_grad and self._grad_fn is None and not self._requires_grad:
        _refuse_captured_mutation(op, self, (
            "that it did not create, with a value that depends on the inputs being differentiated; "
            "clone() it first or use the out-of-place op"
        ))
    node = out._grad_fn
    if out._data.shape != self._data.shape:
        raise ValueError(
            f"{op}: the result of shape {tuple(out.shape)} cannot be written in place into a tensor "
            f"of shape {tuple(self.shape)}"
        )
    source = out._data
    if source.dtype != self._data.dtype and not _dtype.can_store(source.dtype, self._data.dtype):
        raise TypeError(
            f"{op}: result type {out.dtype!r} can't be cast to the desired output type {self.dtype!r}"
        )
    if self._base is not None and _state.enabled and (node is not None or self._base._requires_grad):
        if _made_by_custom_function(self):
            raise InPlaceOnViewError(_custom_function_view_message(self, op))
        if view_shape is None and self._view_replay is not None:
            return _store_through_base(self, op, out, alias)
    if node is not None:
        if self._base is not None or view_shape is not None:
            raise InPlaceOnViewError(
                f"{op}: in-place modification of a view (shape {view_shape or tuple(self.shape)}) while recording "
                "gradients is not supported by numdiff: it would silently miss the base tensor's "
                "gradient. Write into the base tensor (base[index] = value), or clone() the view first."
            )
        if alias is not None:
            _snapshot_saved_alias(node, alias)
    write_at(self, op, Ellipsis, source)
    if node is not None:
        if self._retains_grad and self._grad_fn is not None:
            self._grad_fn._retained = None
        self._grad_fn = node
        self._requires_grad = True
        if self._retains_grad:
            node._retained = weakref.ref(self)
    elif self._grad_fn is not None and _state.enabled:
        # The new value depends on nothing recorded (a random fill, a comparison): the old history
        # no longer reaches it, so no gradient may flow through it (PyTorch's is zero there).
        if self._retains_grad:
            self._grad_fn._retained = None
        self._grad_fn = None
        self._requires_grad = False
    return self


def _store_through_base(view: Tensor, op: str, out: Tensor, alias: Tensor | None) -> Tensor:
    """An in-place op on a view while recording (``h[:, 0].mul_(2)``, ``v[1] = x`` on a view):
    PyTorch's CopySlices. The base's new value is its old one with the view's elements replaced by
    `out`, recorded as one ``index_put`` at the elements' flat positions in the base (the view's
    own view ops, replayed on ``arange(base.numel())``), so gradients reach both the base's other
    elements and whatever `out` was computed from; the base takes that history, and the view (like
    every other view of the base) takes it through its view ops when next used
    (autograd.views.check_view_is_current)."""
    from numdiff.creation import arange
    from numdiff.ops import indexing

    if is_host(view._data) and not view._data.flags.writeable:
        _refuse_read_only(view, op)  # an expanded view: several elements share one location
    if out._grad_fn is not None and alias is not None:
        _snapshot_saved_alias(out._grad_fn, alias)
    base = view._base
    previous = _state.enabled
    _state.enabled = False
    try:
        positions = arange(base.numel(), device=base.device).reshape(base.shape)
        for function, attrs in view._view_replay:
            positions = function.apply(positions, **attrs)
    finally:
        _state.enabled = previous
    base_alias = Tensor._wrap(base._data, base._grad_fn, base._version_counter)
    base_alias._requires_grad = base._requires_grad
    value = out if out.dtype == base.dtype else out.to(base.dtype)
    flat = indexing.index_put(base_alias.reshape(-1), (positions.reshape(-1),), value.reshape(-1))
    _store(base, op, flat.reshape(base.shape), base_alias)
    return view


def _refuse_read_only(self: Tensor, op: str) -> None:
    """NumPy's own message ("assignment destination is read-only") names neither the op nor why."""
    array = self._data
    if array.size > 1 and 0 in array.strides:
        why = "an expanded view (expand, broadcast_to), in which several elements share one memory location"
    else:
        why = "backed by read-only memory (a NumPy array marked read-only, passed to as_tensor or from_numpy)"
    raise RuntimeError(
        f"{op}: cannot write in place into the tensor of shape {tuple(self.shape)}: it is {why}. "
        "clone() it first and write into the clone."
    )


def _refuse_inplace_on_view_of_tracked_base(view: Tensor, op: str) -> None:
    """PyTorch's two view rules: with grad mode on, no in-place op on a view of a leaf that
    requires grad, nor on a view made under no_grad of any tensor that requires grad (either
    would change the base behind autograd's back)."""
    base = view._base
    described = f"the {'leaf' if base._grad_fn is None else base._grad_fn.name() + ' output'} " + (
        f"of shape {tuple(base.shape)} and dtype {base.dtype!r}"
    )
    if view._grad_fn is None:
        raise InPlaceOnViewError(
            f"{op}: this view (shape {tuple(view.shape)}) of {described}, which requires grad, was "
            "created in no_grad mode (or before its base required grad) and is being modified in "
            "place with grad mode enabled. That is ambiguous, so it is forbidden: make the view and "
            "the in-place op both inside the no_grad block (not recorded) or both outside it."
        )
    if base._grad_fn is None:
        if _made_by_custom_function(view):
            raise InPlaceOnLeafError(_custom_function_view_message(view, op))
        raise InPlaceOnLeafError(
            f"{op}: a view (shape {tuple(view.shape)}) of {described} that requires grad is being "
            "used in an in-place operation. Update the leaf inside `with numdiff.no_grad():`, or "
            "use an out-of-place op."
        )


def _made_by_custom_function(t: Tensor) -> bool:
    return hasattr(getattr(t._grad_fn, "function", None), "user_function")


def _custom_function_view_message(view: Tensor, op: str) -> str:
    """A user Function returned an input, or a view of one: its backward, not the view's, is
    recorded, so an in-place op on the output would bypass it (PyTorch refuses it too)."""
    name = view._grad_fn.name()[: -len("Backward")]
    return (
        f"{op}: the output (shape {tuple(view.shape)}) of the custom Function {name} is a view of a "
        f"tensor of shape {tuple(view._base.shape)}, and is being modified in place: {name}.forward "
        "returned a tensor it did not create (an input or a captured tensor) or a view, and an "
        f"in-place op on it would change memory behind {name}'s backward. Return a clone() from "
        "forward, or clone() the output before modifying it."
    )


def _snapshot_saved_alias(node, alias: Tensor) -> None:
    if not any(item is alias for item in node._saved):
        return
    snapshot = Tensor._wrap(alias._data.copy(), alias._grad_fn, None)
    snapshot._requires_grad = alias._requires_grad
    saved = list(node._saved)
    versions = list(node._saved_versions)
    for i, item in enumerate(saved):
        if item is alias:
            saved[i] = snapshot
            versions[i] = 0
    node._saved = tuple(saved)
    node._saved_versions = tuple(versions)

