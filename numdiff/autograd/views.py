"""Views and in-place ops on their base: a view made before a recorded in-place op on its base
takes the base's new history when it is next used, by applying its view ops again."""

from __future__ import annotations

import weakref
from typing import Any

from numdiff.autograd.grad_mode import _state


class StaleViewError(RuntimeError):
    """A view was used after a recorded in-place op gave its base a new history."""


def check_view_is_current(view: Any, op: str) -> None:
    """Bring a view up to date with its base after a recorded in-place op on the base: the view's
    history reads the base's old value, so, as PyTorch does, the view ops that made it are applied
    again to the base (recorded on its new history) and the view takes that history. A view
    without that record (one a custom Function's forward returned) is refused instead."""
    base = view._base
    if base._grad_fn is view._base_node:
        return
    replay = view._view_replay
    if replay is not None:
        _replay_view(view, base, replay)
        return
    raise StaleViewError(
        f"{op}: a view (shape {tuple(view.shape)}) of a tensor of shape {tuple(base.shape)} is used "
        f"after that tensor was modified in place by a recorded {base._grad_fn.name()}; the view "
        "was made before, by a custom Function's forward (or inside vmap), which cannot be applied "
        "again to the new value, so its gradient would miss the modification. Make the view again "
        "after the in-place op, or make it from a clone() of the base."
    )


def _replay_view(view: Any, base: Any, replay: tuple) -> None:
    previous = _state.enabled
    _state.enabled = True
    try:
        fresh = base
        for function, attrs in replay:
            fresh = function.apply(fresh, **attrs)
    finally:
        _state.enabled = previous
    old, node = view._grad_fn, fresh._grad_fn
    # retain_grad() carries over; hooks registered on the view's old history stay there, as in
    # PyTorch (they do not fire for the new one).
    if view._retains_grad and node is not None:
        if old is not None:
            old._retained = None
        node._retained = weakref.ref(view)
    view._grad_fn = node
    view._requires_grad = fresh._requires_grad
    view._base_node = base._grad_fn
