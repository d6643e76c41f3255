"""The backward pass now running in this thread, for hooks that must know which nodes it reaches.

PyTorch's engine keeps a GraphTask per backward call; ``register_multi_grad_hook`` asks it for the
pass's identity (``_current_graph_task_id``) and whether a node will run (``_will_engine_execute_node``).
numdiff's engine pushes a `GraphTask` here when its walk starts and pops it when the walk ends; a
backward started inside a hook nests above it. This module imports nothing from numdiff, so both the
engine and numdiff.autograd.graph can use it.
"""

from __future__ import annotations

import threading
from typing import Any


class GraphTask:
    """One backward walk: the nodes it reaches (`dependencies`, the edge counts the engine keeps,
    plus the `roots`) and, when it was given ``inputs``, the nodes it runs (`needed`). Hooks that
    count calls per pass keep their state in `hook_state` (keyed by the hook), so it ends with the pass."""

    __slots__ = ("roots", "dependencies", "needed", "targets", "hook_state")

    def __init__(self, roots: list, dependencies: dict, needed: set | None, targets: dict | None = None) -> None:
        self.roots, self.dependencies, self.needed = roots, dependencies, needed
        self.targets = targets or {}  # the requested inputs' nodes: they run, and `needed` may leave them out
        self.hook_state: dict | None = None

    def state_of(self, key: Any, make: Any) -> Any:
        """The state `key` keeps for this pass, made by ``make()`` on first use."""
        if self.hook_state is None:
            self.hook_state = {}
        state = self.hook_state.get(key)
        if state is None:
            state = self.hook_state[key] = make()
        return state

    def will_execute(self, node: Any) -> bool:
        """Whether this walk runs `node` (a grad_fn or a leaf's AccumulateGrad), as PyTorch's
        ``_will_engine_execute_node``: reachable from the roots, and needed for the inputs if any."""
        if node is None:
            return False
        if self.needed is not None:
            return node in self.needed or node in self.targets
        return node in self.dependencies or node in self.roots


class _Running(threading.local):
    def __init__(self) -> None:
        self.tasks: list[GraphTask] = []


_running = _Running()
wanted = False
"""Whether any hook has asked for the running walk (register_multi_grad_hook sets it, once): until
then the engine skips the bookkeeping, ~1 us of a small backward's ~30 us."""


def want() -> None:
    global wanted
    wanted = True


def push(task: GraphTask) -> None:
    _running.tasks.append(task)


def pop() -> None:
    _running.tasks.pop()


def current() -> GraphTask | None:
    """The innermost backward walk of this thread, or None outside backward."""
    tasks = _running.tasks
    return tasks[-1] if tasks else None
