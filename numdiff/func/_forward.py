"""Forward mode as a level of the interpreter stack: `JvpLevel`, pushed by numdiff.func.jvp.

While a jvp level is innermost, every op call reaches `JvpLevel.apply`. The level keeps the
tangent of each tensor it has seen, keyed by the tensor's storage (the array under any vmap
wrappers), not by the Tensor object: a tensor rebuilt around the same array (a saved input read
back in backward, a leaf that grad makes with ``detach().requires_grad_()``) keeps its tangent, as
a dual number keeps its dual part. That is what lets jvp push forward through a backward pass
(jvp of grad, hessian as jacfwd of jacrev): the backward's ops read the saved tensors, which carry
their tangents. An op whose inputs carry no tangent runs at the level below untouched; otherwise
it runs at the level below and its output's tangent is computed there too, from:

- the op's rule (its spec's ``jvp``, attached by numdiff.func._jvp_rules: the scalar rules'
  derivatives, linear and multilinear ops), in one pass;
- a user Function's ``jvp`` staticmethod, with what forward kept by ``ctx.save_for_forward``;
- otherwise, for a built-in op, a double vjp of that op alone: g(u) = J^T u for a dummy
  cotangent u, whose vjp with the tangent is J t.

Running the tangent maths at the level below makes nesting follow from the stack: under an outer
jvp level it is pushed forward again (jacfwd of jacfwd), under vmap it batches, and on the tape it
is recorded (grad of jvp).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import _batched, _inplace
from numdiff._batched import BatchedTensor
from numdiff.autograd import custom_function
from numdiff.autograd import grad as autograd_grad
from numdiff.autograd.grad_mode import enable_grad
from numdiff.autograd.transform_state import Interpreter, transforms
from numdiff.creation import zeros_like
from numdiff.func import _jvp_rules as _jvp_rules  # attaches every op's jvp rule to its spec
from numdiff.tensor import Tensor


class ForwardModeRerun(Exception):  # noqa: N818 - a signal to numdiff.func.jvp, never seen by users
    """An in-place update of a view, or a view read after an in-place update of its base, inside
    jvp: jvp runs the function again by double vjp, whose tape replays views."""


def _storage(t: Tensor) -> Tensor:
    """The tensor holding the array: `t` under its vmap wrappers."""
    while type(t) is BatchedTensor:
        t = t._value
    return t


def _floating(t: Any) -> bool:
    return isinstance(t, Tensor) and t._data.dtype.kind in "fV"


def _take_level(t: Tensor, level: int) -> Tensor:
    """`t` with its batch at vmap `level` as its logical dim 0 (broadcast there if `t` is not
    batched at `level`)."""
    value, levels = _batched.physical(t)
    if level not in levels:
        return t.unsqueeze(0).expand(transforms.batch_sizes[level - 1], *t.shape)
    value = _moved(value, levels[::-1].index(level), len(levels) - 1)
    return _batched.rewrap(value, [other for other in levels if other != level])


def _give_level(t: Tensor, level: int) -> Tensor:
    """`t`'s logical dim 0 as the batch of vmap `level`; where `t` is batched at `level` already,
    entry b of that batch takes row b (the diagonal)."""
    value, levels = _batched.physical(t)
    ascending = levels[::-1]
    if level in ascending:
        position = ascending.index(level)
        diagonal = value.diagonal(0, position, len(levels))
        return _batched.rewrap(_moved(diagonal, diagonal.ndim - 1, position), levels)
    position = sum(1 for other in ascending if other < level)
    value = _moved(value, len(levels), position)
    return _batched.rewrap(value, sorted([*ascending, level], reverse=True))


def _moved(value: Tensor, source: int, destination: int) -> Tensor:
    """``value.movedim(source, destination)`` for dims counted from 0, skipped where it is no move
    (the common case: one vmap level; the call's argument checks cost more than the op here)."""
    return value if source == destination else value.movedim(source, destination)


class JvpLevel(Interpreter):
    """One jvp level: tangents by storage, and op calls pushed forward (see the module docstring).

    A tangent is kept in its storage's physical layout: for a tensor batched by vmap levels below
    this one, the tangent of the array under it, batch dims first (`_take_level`). Reading it back
    for a tensor gives the batch dims back (`_give_level`). So a tensor and the same array seen
    through other vmap wrappers (a grad level's ``promote``, the tape's physical values) agree.
    """

    sees_vmap_levels_below = True  # numdiff._vmap_level.VmapLevel hands it their ops

    def __init__(self) -> None:
        # id(array) -> (array, tangent): the array is held so that its id is not reused.
        self.tangents: dict[int, tuple[Any, Tensor]] = {}
        # The vmap levels below this one (those above unwrap their tensors before they get here).
        self.vmap_levels = list(range(1, transforms.vmap_depth + 1))
        # Arrays that share memory with one an in-place op changed: their tangents are out of date.
        self.stale: set[int] = set()

    def tangent_of(self, t: Any) -> Tensor | None:
        """The tangent `t` carries at this level, or None (zero). Runs ops at the level below."""
        if not isinstance(t, Tensor):
            return None
        storage, levels = _batched.physical(t)
        entry = self.tangents.get(id(storage._data))
        if entry is None:
            return None
        if self.stale and id(storage._data) in self.stale:
            raise ForwardModeRerun("a view read after an in-place update of the memory it shares")
        tangent = entry[1]
        for level in levels[::-1]:
            tangent = _give_level(tangent, level)
        return tangent

    def set_tangent(self, t: Tensor, tangent: Tensor | None) -> None:
        """Make `tangent` (shaped as `t`) the tangent of `t`'s storage. Runs ops at the level below."""
        storage, levels = _batched.physical(t)
        data = storage._data
        if tangent is None:
            self.tangents.pop(id(data), None)
            return
        for level in levels:
            tangent = _take_level(tangent, level)
        self.tangents[id(data)] = (data, tangent)

    def apply(self, cls: Any, inputs: tuple, attrs: dict) -> Any:
        table = self.tangents
        if not any(isinstance(x, Tensor) and id(_storage(x)._data) in table for x in inputs):
            return super().apply(cls, inputs, attrs)
        state = transforms
        state.interpreter = self.parent
        try:
            tangents = [self.tangent_of(x) for x in inputs]
            out, pushed = push_forward(cls, inputs, attrs, tangents, self.vmap_levels)
            for o, p in zip(out if isinstance(out, tuple) else (out,), pushed):
                if p is not None:
                    self.set_tangent(o, p)
        finally:
            state.interpreter = self
        return out

    def detach(self, tensor: Tensor) -> Tensor:
        """A detached tensor drops its tangent, as in torch.func: it gets an array of its own (a
        view of the same memory), which this level has no tangent for."""
        return Tensor._wrap(tensor._data[...], None, tensor._version_counter)

    def inplace(self, tensor: Any, op: str, compute: Any) -> Any:
        """The update runs at the level below, with `compute` (the op out of place) run at this
        level so that its result's tangent becomes `tensor`'s."""
        results = []
        state = transforms

        def pushed(old: Tensor) -> Tensor:
            if before is not None:
                self.set_tangent(old, before)  # vmap hands compute a copy of the batch
            state.interpreter = self
            try:
                out = compute(old)
            finally:
                state.interpreter = self.parent
            results.append(out)
            return out

        state.interpreter = self.parent
        try:
            before = self.tangent_of(tensor)
            updated = _inplace.apply_inplace(tensor, op, pushed)
            after = self.tangent_of(results[0]) if results else None
            if before is None and after is None:
                return updated
            data = _storage(tensor)._data
            if _storage(tensor)._base is not None:
                raise ForwardModeRerun(op)
            for key, (array, _) in self.tangents.items():
                if array is not data and np.may_share_memory(array, data):
                    self.stale.add(key)
            if after is not None and tuple(after.shape) != tuple(tensor.shape):
                after = after.expand(*tensor.shape)
            self.set_tangent(tensor, after)
        finally:
            state.interpreter = self
        return updated


def push_forward(cls: Any, inputs: tuple, attrs: dict, tangents: list, vmap_levels: list) -> tuple[Any, list]:
    """The op's output and one tangent per output (None for none), at the current level, below
    which `vmap_levels` are active."""
    if not cls.array_forward:
        return _custom_jvp(cls, inputs, attrs, tangents)
    spec = getattr(cls, "spec", None)  # index outputs and @elementwise functions have none
    rule = None if spec is None else spec.jvp
    if rule is None:
        return _double_vjp(cls, inputs, attrs, tangents, vmap_levels)
    out = cls.apply(*inputs, **attrs)
    if not _floating(out):
        return out, [None]
    return out, [_fitted(rule(cls, inputs, attrs, tangents, out), out)]


def _fitted(tangent: Any, out: Tensor) -> Any:
    """`tangent` in `out`'s shape (a binary op's term has its input's) and dtype."""
    if tangent is None:
        return None
    if tuple(tangent.shape) != tuple(out.shape):
        tangent = tangent.expand(*out.shape)
    if tangent.dtype != out.dtype:
        tangent = tangent.to(out.dtype)
    return tangent


def _double_vjp(cls: Any, inputs: tuple, attrs: dict, tangents: list, vmap_levels: list) -> tuple[Any, list]:
    """An op without a rule: its inputs with tangents get fresh nodes (a recorded copy where an
    outer level tracks them), g = J^T u is recorded for a dummy u, and J t is the vjp of g."""
    args = list(inputs)
    tracked = []
    outer = promoted = False
    with enable_grad():
        for index, tangent in enumerate(tangents):
            if tangent is None:
                continue
            batched = _batched.promote(inputs[index], vmap_levels)
            promoted = promoted or batched is not inputs[index]
            value, levels = _batched.physical(batched)
            tangent_value = _batched.physical(_batched.promote(tangent, vmap_levels))[0]
            outer = outer or value.requires_grad or tangent_value.requires_grad
            if value.requires_grad:
                value = value.clone()
            else:
                value = Tensor._wrap(value._data, None, value._version_counter).requires_grad_()
                for sink in transforms.leaf_sinks:
                    sink.append((value, levels))
            tracked.append((value, tangent_value))
            args[index] = _batched.rewrap(value, levels)
        outer = outer or any(isinstance(x, Tensor) and _storage(x).requires_grad for x in inputs)
        out = cls.apply(*args, **attrs)
        outs = list(out) if isinstance(out, tuple) else [out]
        values = [_batched.physical(o)[0] if _floating(o) else None for o in outs]
        live = [k for k, v in enumerate(values) if v is not None and (v._grad_fn is not None or v._requires_grad)]
        dummies = [zeros_like(values[k]).requires_grad_() for k in live]
        pulled = [None] * len(tracked)
        if live:
            pulled = autograd_grad(
                [values[k] for k in live], [v for v, _ in tracked], grad_outputs=dummies,
                create_graph=True, allow_unused=True,
            )  # fmt: skip
        used = [(g, t) for g, (_, t) in zip(pulled, tracked) if g is not None]
        pushed = [None] * len(live)
        if used:
            pushed = autograd_grad(
                [g for g, _ in used], dummies, grad_outputs=[t.expand(*g.shape) for g, t in used],
                create_graph=True, allow_unused=True,
            )  # fmt: skip
    results: list = [None] * len(outs)
    for k, p in zip(live, pushed):
        if p is not None:
            results[k] = _batched.rewrap(p if outer else _detached(p), _batched.physical(outs[k])[1])
    if promoted or outer:
        # The result the caller gets is the op on its own inputs: recorded on them (a grad level
        # around reads them back in backward, with their tangents at this jvp level, not the
        # copies' above), and batched as they are (not at the levels added for per-entry
        # derivatives: an in-place op writes it back into one of them).
        return cls.apply(*inputs, **attrs), results
    # Nothing outside this op is differentiated: the fresh leaves must not leak.
    outs = [_detached(o) if _floating(o) else o for o in outs]
    return (tuple(outs) if isinstance(out, tuple) else outs[0]), results


def _detached(t: Tensor) -> Tensor:
    """`t` without its history, keeping its array (and so its tangents at outer jvp levels)."""
    value, levels = _batched.physical(t)
    return _batched.rewrap(Tensor._wrap(value._data, None, value._version_counter), levels)


class MissingJvpError(custom_function.CustomFunctionError, NotImplementedError):
    """A user Function without a ``jvp`` staticmethod met forward mode (numdiff.func.jvp, jacfwd)."""


class _ForwardCtx:
    """The ctx a user Function's jvp gets: forward's ctx, whose `saved_tensors` are what forward
    kept with ``ctx.save_for_forward`` (PyTorch's contract). Attributes forward set are read
    through; ones jvp sets stay here."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    @property
    def saved_tensors(self) -> tuple:
        return tuple(getattr(self._ctx, "saved_for_forward", ()))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    def __delattr__(self, name: str) -> None:
        # ``del ctx.result`` in jvp frees what forward kept, as PyTorch's tutorial does.
        if name in self.__dict__:
            del self.__dict__[name]
        else:
            delattr(self._ctx, name)


def _custom_jvp(cls: Any, inputs: tuple, attrs: dict, tangents: list) -> tuple[Any, list]:
    """A user Function: forward runs (keeping its ctx), then ``cls.jvp(ctx, *tangents)`` with a
    zero tangent for each tensor input that has none and None for other arguments."""
    user = getattr(cls, "user_function", cls)
    jvp = getattr(user, "jvp", None)
    if jvp is None:
        carried = [i for i, t in enumerate(tangents) if t is not None]
        raise MissingJvpError(
            f"{user.__name__} has no jvp, and forward mode (numdiff.func.jvp, jacfwd, hessian) reached it "
            f"with tangents for arguments {carried}. Add `@staticmethod def jvp(ctx, *tangents)` returning "
            f"the output's tangent (one per output, given one tangent per forward argument), and keep what "
            "it needs with ctx.save_for_forward(...) in forward or setup_context."
        )
    box: list = []  # filled with forward's ctx by custom_function.apply_custom
    pending = transforms.forward_ctx
    pending.append(box)
    try:
        out = cls.apply(*inputs, **attrs)
    finally:
        pending.remove(box)
    if not box:
        raise custom_function.CustomFunctionError(
            f"{user.__name__}: forward mode needs the ctx of its forward, but forward did not run as one call "
            "(a vmap rule or a per-example loop ran it): call it outside vmap, or give its inputs no batch"
        )
    filled = [
        t if t is not None else zeros_like(x) if _floating(x) else None for x, t in zip(inputs, tangents)
    ]
    pushed = jvp(_ForwardCtx(box[0]), *filled)
    outs = out if isinstance(out, tuple) else (out,)
    pushed = pushed if isinstance(pushed, tuple) else (pushed,)
    if len(pushed) != len(outs):
        raise custom_function.CustomFunctionError(
            f"{user.__name__}.jvp returned {len(pushed)} tangents for {len(outs)} outputs: return one "
            "tangent per output of forward (None for an output without one)"
        )
    results = []
    for index, (o, p) in enumerate(zip(outs, pushed)):
        if p is not None and (not isinstance(p, Tensor) or not _floating(o) or tuple(p.shape) != tuple(o.shape)):
            got = tuple(p.shape) if isinstance(p, Tensor) else type(p).__name__
            expected = tuple(o.shape) if isinstance(o, Tensor) else type(o).__name__
            raise custom_function.CustomFunctionError(
                f"{user.__name__}.jvp returned a tangent of {got} for output {index}, which is {expected}: "
                "a tangent must be a Tensor shaped as its floating-point output"
            )
        results.append(p if _floating(o) else None)
    return out, results
