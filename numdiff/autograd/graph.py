"""numdiff.autograd.graph: hooks on the tensors the graph saves for backward, as PyTorch's, and
``register_multi_grad_hook``, one hook over the gradients of several tensors.

Inside ``saved_tensors_hooks(pack, unpack)``, every tensor an op saves for backward is stored as
``pack(tensor)`` (any object), and backward reads ``unpack(packed)`` instead; the innermost block
wins. ``save_on_cpu`` is such a pair that moves saved tensors to the host and back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from numdiff.autograd import _graph_task
from numdiff.autograd.hooks import check_callable

# PyTorch keeps this module's Node name in numdiff.autograd.function, where the graph is built.

__all__ = ["disable_saved_tensors_hooks", "register_multi_grad_hook", "save_on_cpu", "saved_tensors_hooks"]


def __dir__() -> list[str]:
    return sorted(__all__)


class _HookStack(threading.local):
    """Per thread: the active (pack, unpack) pairs, innermost last, and why hooks are disabled."""

    def __init__(self) -> None:
        self.pairs: list[tuple[Callable[[Any], Any], Callable[[Any], Any]]] = []
        self.disabled: list[str] = []


_stack = _HookStack()
_count_lock = threading.Lock()
pairs_anywhere = 0
"""How many (pack, unpack) pairs are active over all threads: while none is, the op path skips the
per-thread lookup (numdiff.autograd.node._bind_saved reads it on every recorded op that saves)."""


class PackedSaved:
    """A saved tensor as its pack hook returned it, with the unpack hook that restores it, and
    the name PyTorch's grad_fn gives the slot (``self``, ``other``, ``result``)."""

    __slots__ = ("packed", "unpack_hook", "name")

    def __init__(self, packed: Any, unpack_hook: Callable[[Any], Any], name: str | None) -> None:
        self.packed, self.unpack_hook, self.name = packed, unpack_hook, name


def active_pair() -> tuple[Callable[[Any], Any], Callable[[Any], Any]] | None:
    """The innermost (pack, unpack) pair of this thread, or None."""
    return _stack.pairs[-1] if _stack.pairs else None


def slot_names(next_nodes: list, input_shapes: list, tensors: list) -> list[str | None]:
    """PyTorch's names for saved slots: ``result`` for the op's output, ``self`` and ``other`` for
    its first two inputs (``input2``, ... after them); `tensors` holds, per slot, None, the saved
    input Tensor, or the string "result". An input is found by the edge it feeds (its grad_fn, or
    the AccumulateGrad of a leaf), or by its shape when it needs no gradient."""
    names: list[str | None] = []
    taken: set[int] = set()
    for tensor in tensors:
        if tensor is None or isinstance(tensor, str):
            names.append(tensor)
            continue
        position = None
        for k, edge in enumerate(next_nodes):
            if k in taken:
                continue
            grad_fn = tensor.grad_fn
            if (grad_fn is not None and edge is grad_fn) or getattr(edge, "variable", None) is tensor or (
                edge is None and grad_fn is None and input_shapes[k] == tuple(tensor.shape)
            ):
                position = k
                break
        if position is None:
            names.append(None)
            continue
        taken.add(position)
        names.append({0: "self", 1: "other"}.get(position, f"input{position}"))
    return names


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name, a context manager
    """Store saved tensors as ``pack_hook(tensor)`` and give backward ``unpack_hook(packed)``.

    >>> with numdiff.autograd.graph.saved_tensors_hooks(lambda t: t * 4, lambda t: t / 4):
    ...     y = x.pow(2)
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError(
                f"saved_tensors_hooks takes two callables, got {type(pack_hook).__name__} and {type(unpack_hook).__name__}"
            )
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        if _stack.disabled:
            raise RuntimeError(_stack.disabled[-1])
        global pairs_anywhere
        _stack.pairs.append((self.pack_hook, self.unpack_hook))
        with _count_lock:
            pairs_anywhere += 1
        return self

    def __exit__(self, *exc_info: object) -> None:
        global pairs_anywhere
        _stack.pairs.pop()
        with _count_lock:
            pairs_anywhere -= 1


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """Keep the tensors saved for backward on the host, moved back to their device when used.
    `pin_memory` is accepted; numdiff has no pinned host memory, so it changes nothing."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(tensor: Any) -> tuple[Any, Any]:
            return tensor.device, tensor.cpu()

        def unpack(packed: tuple[Any, Any]) -> Any:
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Inside this block, entering saved_tensors_hooks raises RuntimeError(error_message)."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> disable_saved_tensors_hooks:
        _stack.disabled.append(self.error_message)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _stack.disabled.pop()


class _MultiHandle:
    """The handle register_multi_grad_hook returns: ``remove()`` removes the hook from every tensor."""

    __slots__ = ("handles",)

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __enter__(self) -> _MultiHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()


def _node_of(tensor: Any) -> Any:
    """The node backward runs for `tensor`: its grad_fn, or the AccumulateGrad the running walk holds
    for a leaf (None when no walk reaches the leaf: the engine keeps it only weakly cached)."""
    if tensor._grad_fn is not None:
        return tensor._grad_fn
    ref = tensor._grad_accumulator
    return ref() if ref is not None else None


def register_multi_grad_hook(tensors: Sequence[Any], fn: Callable[..., Any], *, mode: str = "all") -> _MultiHandle:
    """One hook over the gradients of several tensors, as PyTorch's.

    ``mode="all"``: once per backward, after the gradient of every tensor that backward computes,
    ``fn(grads)`` gets a list with one gradient per tensor (None for a tensor the pass does not reach,
    or that no ``inputs=`` of the pass needs). ``mode="any"``: ``fn(grad)`` gets the first gradient
    computed for any of the tensors, once per backward. `fn`'s return value is ignored: the hook
    changes no gradient. ``handle.remove()`` unregisters it.

    >>> seen = []
    >>> handle = numdiff.autograd.graph.register_multi_grad_hook((a, b), lambda gs: seen.append(gs))
    >>> (a * b).sum().backward()   # seen[0] == [b, a]
    """
    if mode not in ("all", "any"):
        raise ValueError(f"register_multi_grad_hook: mode must be 'all' or 'any', got {mode!r}")
    check_callable("register_multi_grad_hook", fn)
    tensors = tuple(tensors)
    for i, tensor in enumerate(tensors):
        if not hasattr(tensor, "register_hook"):
            raise TypeError(f"register_multi_grad_hook: tensors[{i}] is a {type(tensor).__name__}, not a Tensor")
    _graph_task.want()
    lock = threading.Lock()
    key = object()  # this hook's slot in each pass's hook_state
    if mode == "any":

        def first_only(grad: Any) -> None:
            task = _graph_task.current()
            if task is not None:
                with lock:
                    fired = task.state_of(key, list)
                    if fired:
                        return
                    fired.append(True)
            fn(grad)

        return _MultiHandle(tuple(t.register_hook(first_only) for t in tensors if t.requires_grad))

    def hook_for(index: int) -> Callable[[Any], None]:
        def collect(grad: Any) -> None:
            task = _graph_task.current()
            if task is None or not task.will_execute(_node_of(tensors[index])):
                return  # the engine also runs the hook of a leaf that this pass's inputs leave out
            with lock:
                # [gradients so far, calls still to come]; the count is taken at the first call, as
                # PyTorch does, when every node the pass reaches is known.
                state = task.state_of(key, lambda: [[None] * len(tensors), sum(
                    task.will_execute(_node_of(t)) for t in tensors)])
                state[0][index] = grad
                state[1] -= 1
                done = state[1] == 0
            if done:
                fn(state[0])

        return collect

    return _MultiHandle(tuple(t.register_hook(hook_for(i)) for i, t in enumerate(tensors)))
