"""The one door: every op call goes to the innermost active interpreter of the calling thread.

An interpreter is a level of the stack that handles op calls in its own way: numdiff.func.vmap
runs batching rules, numdiff.compile records a graph. With none active, ops run eagerly (and
record themselves on the tape). The entry points consult `transforms.interpreter`, the innermost
one: `Function.apply` (every op), `numdiff._host_functions.host_function` (computations outside
an op: comparisons, argmax), and the effects an interpreter may refuse or take over: host reads
(``item``, ``numpy``, ``bool(t)``...), in-place updates, random draws, detach and backward passes.

An interpreter hands an op to the level below by running it with its parent as the innermost
(`Interpreter.apply`; JAX's bind: the parent is the interpreter that was innermost when this one
was pushed), so nesting (vmap inside compile, compile inside vmap) follows from the order of the
stack. Nothing is patched.

The stack and the transform levels are per thread (PyTorch keeps grad mode and functorch levels
in thread-local storage): a vmap or a trace in one thread is never seen by another. `anywhere`
counts the interpreters and grad-transform levels active in every thread, so the eager path pays
one plain attribute read while no thread uses a transform (a thread-local read costs ten times
more: 150 ns against 12 ns here).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class TransformState(threading.local):
    """One thread's dispatch state: the innermost interpreter, vmap batch sizes and randomness
    modes (innermost last), and the grad-level depth."""

    def __init__(self) -> None:
        self.interpreter: Interpreter | None = None
        self.vmap_depth = 0
        self.batch_sizes: list[int] = []
        self.grad_depth = 0
        self.randomness: list[str] = []
        self.same_draw_replays: list = []  # numdiff._random.SameDrawReplay, outermost first
        # One empty list per jvp level waiting for a user Function's forward ctx (its jvp reads it).
        self.forward_ctx: list[list] = []
        # One list per jvp call: the leaves that grad levels inside it made, (tensor, vmap levels).
        self.leaf_sinks: list[list] = []


transforms = TransformState()


class _Anywhere:
    """How many interpreters are pushed and grad-transform levels entered, summed over all
    threads (changed under `_push_lock`): while it is 0, every thread runs eagerly."""

    __slots__ = ("levels",)

    def __init__(self) -> None:
        self.levels = 0


anywhere = _Anywhere()
_push_lock = threading.Lock()


class Interpreter:
    """A level of the interpreter stack. Subclasses override the entry points they handle; the
    others go to the level below (`parent`), and with none left the call runs eagerly.

    `apply` and `host_call` return the result; `apply` runs the op at the level below. The
    effect hooks (`host_read`, `inplace`, `draw`,
    `backward`) raise to refuse; `inplace` may also return the updated tensor to take the update
    over (None lets it run eagerly).
    """

    parent: Interpreter | None = None
    records_graph: bool = False
    """True for a level that records ops into a graph replayed later with other values
    (numdiff.compile's trace): see `graph_recording`."""

    def apply(self, cls: Any, inputs: tuple, attrs: dict) -> Any:
        """A Function's op call (``cls.apply(*inputs, **attrs)``)."""
        state = transforms
        state.interpreter = self.parent
        try:
            return cls.apply(*inputs, **attrs)
        finally:
            state.interpreter = self

    def host_call(self, function: Any, args: tuple, kwargs: dict) -> Any:
        """A call of a host function (numdiff._host_functions). It runs at the current level (its
        own op calls come through `apply`); an interpreter that records it overrides this."""
        if self.parent is not None:
            return self.parent.host_call(function, args, kwargs)
        return function(*args, **kwargs)

    def host_read(self, tensor: Any, what: str) -> None:
        """`what` (``"Tensor.item()"``) reads `tensor`'s values into Python."""
        if self.parent is not None:
            self.parent.host_read(tensor, what)

    def inplace(self, tensor: Any, op: str, compute: Any) -> Any:
        """An in-place update of `tensor` by `op`; None lets it run as usual."""
        return None if self.parent is None else self.parent.inplace(tensor, op, compute)

    def draw(self, generator: Any) -> None:
        """A random op is about to draw from `generator` (None: the default generator)."""
        if self.parent is not None:
            self.parent.draw(generator)

    def random_call(self, function: Any, args: tuple, kwargs: dict) -> Any:
        """A call of a random function (numdiff._host_functions.random_function: rand, randn,
        multinomial...). It runs at the current level (its draw comes through `draw`); an
        interpreter that records it overrides this."""
        if self.parent is not None:
            return self.parent.random_call(function, args, kwargs)
        return function(*args, **kwargs)

    def grad_read(self, tensor: Any) -> None:
        """``tensor.grad`` is read into Python."""
        if self.parent is not None:
            self.parent.grad_read(tensor)

    def detach(self, tensor: Any) -> Any:
        """``tensor.detach()``; None lets it share `tensor`'s array as usual (an interpreter that
        keys values by their array, numdiff.func's jvp level, returns one on an array of its own)."""
        return None if self.parent is None else self.parent.detach(tensor)

    def backward(self, capture: bool, create_graph: bool) -> bool:
        """A backward pass starts (``capture``: autograd.grad, else Tensor.backward). True when an
        interpreter needs the pass's backward formulas to run as ops it sees (their create_graph
        form) even without create_graph: numdiff.compile's trace, which records them."""
        return self.parent is not None and self.parent.backward(capture, create_graph)

    def defer_backward(self, root: Any, options: dict) -> bool:
        """``root.backward(**options)`` (Tensor.backward, writing ``.grad``) is called. True when
        the interpreter takes the pass over and runs it later itself: numdiff.compile's trace
        replays it after each compiled call (numdiff/compile/host_steps.py)."""
        return self.parent is not None and self.parent.defer_backward(root, options)

    def host_step(self, owner: Any, kind: str, run: Any) -> Any:
        """`run()` updates state outside any graph: ``owner.step()`` or ``owner.zero_grad()``
        (`kind` "step" or "zero_grad") of an optimizer or Module. It runs now, unless an
        interpreter takes it over (numdiff.compile's trace replays it after each compiled call)."""
        return run() if self.parent is None else self.parent.host_step(owner, kind, run)


def push(interpreter: Interpreter) -> None:
    """Make `interpreter` this thread's innermost one (its parent: the one innermost until now)."""
    interpreter.parent = transforms.interpreter
    with _push_lock:
        anywhere.levels += 1
    transforms.interpreter = interpreter


def pop(interpreter: Interpreter) -> None:
    """Undo `push(interpreter)`: the level below it is innermost again."""
    transforms.interpreter = interpreter.parent
    with _push_lock:
        anywhere.levels -= 1


@contextmanager
def interpreting(interpreter: Interpreter) -> Iterator[Interpreter]:
    """Push `interpreter` onto this thread's stack for the block."""
    push(interpreter)
    try:
        yield interpreter
    finally:
        pop(interpreter)


def host_step(owner: Any, kind: str, run: Any) -> Any:
    """Run `run()`, ``owner.step()`` or ``owner.zero_grad()`` (`kind`), which updates state outside
    any graph, through this thread's innermost interpreter (eagerly when there is none).

    >>> host_step(optimizer, "step", lambda: update(optimizer))
    """
    top = transforms.interpreter
    return run() if top is None else top.host_step(owner, kind, run)


def vmap_active() -> bool:
    """Whether this thread is inside numdiff.func.vmap (cheap while no thread is)."""
    return anywhere.levels > 0 and transforms.vmap_depth > 0


def enter_grad_level() -> None:
    """A numdiff.func grad-transform level (grad, vjp, jvp) starts in this thread."""
    with _push_lock:
        anywhere.levels += 1
    transforms.grad_depth += 1


def exit_grad_level() -> None:
    """Undo `enter_grad_level`."""
    transforms.grad_depth -= 1
    with _push_lock:
        anywhere.levels -= 1


def graph_recording() -> bool:
    """Whether a level that records ops into a graph (numdiff.compile's trace) is active in this
    thread. Code that would branch on tensor values takes the form right for every value then:
    the graph would keep the first call's branch."""
    level = transforms.interpreter if anywhere.levels else None
    while level is not None and not level.records_graph:
        level = level.parent
    return level is not None


def innermost(kind: type) -> Any:
    """The innermost interpreter of type `kind` below and at the current top, or None."""
    level = transforms.interpreter if anywhere.levels else None
    while level is not None and not isinstance(level, kind):
        level = level.parent
    return level
