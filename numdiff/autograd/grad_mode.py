"""Thread-local grad mode: `no_grad`, `enable_grad`, `set_grad_enabled`, `inference_mode`."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _State(threading.local):
    enabled = True
    # Set while numdiff.compile traces a backward (numdiff/compile/backward.py): ops record
    # themselves, but the gradients they compute are never differentiated again.
    tracing_backward = False
    # Inside inference_mode(): only reported (is_inference_mode_enabled); it records as no_grad.
    inference = False


_state = _State()


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` (and a function it decorates), as in PyTorch."""
    return _state.inference


def is_grad_enabled() -> bool:
    """True when ops record themselves for backward (the default)."""
    return _state.enabled


def backward_is_differentiated() -> bool:
    """In an op's backward: whether its result may itself be differentiated (create_graph=True).

    False while numdiff.compile traces a backward, although ops record themselves then: the
    generated backward is never differentiated (a second derivative through a compiled call
    re-runs the function eagerly), so a backward may use a first-order shortcut it saved, as
    long as what it reads is a saved tensor (a value of the traced graph).
    """
    return _state.enabled and not _state.tracing_backward


class _GradMode:
    """Sets grad mode for a `with` block, or for every call of a decorated function."""

    _mode: bool

    def __enter__(self) -> None:
        self._previous = _state.enabled
        _state.enabled = self._mode

    def __exit__(self, *exc_info: object) -> None:
        _state.enabled = self._previous

    def __call__(self, func: F) -> F:
        mode = self._mode

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            previous = _state.enabled
            _state.enabled = mode
            try:
                return func(*args, **kwargs)
            finally:
                _state.enabled = previous

        return wrapper  # type: ignore[return-value]


class no_grad(_GradMode):  # noqa: N801 - PyTorch's name
    """Ops inside record nothing: ``with numdiff.no_grad(): w -= lr * w.grad``."""

    _mode = False


class enable_grad(_GradMode):  # noqa: N801
    """Turns recording back on inside a `no_grad` block."""

    _mode = True


class inference_mode(_GradMode):  # noqa: N801
    """Like `no_grad`; numdiff has no separate inference tensors. ``inference_mode(False)`` is a no-op."""

    def __init__(self, mode: bool = True) -> None:
        self._disable = bool(mode)

    def __enter__(self) -> None:
        self._mode = False if self._disable else _state.enabled
        self._previous_inference = _state.inference
        _state.inference = self._disable
        super().__enter__()

    def __exit__(self, *exc_info: object) -> None:
        super().__exit__(*exc_info)
        _state.inference = self._previous_inference

    def __call__(self, func: F) -> F:
        self._mode = False if self._disable else True
        grad_wrapper, disable = super().__call__(func), self._disable

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            previous = _state.inference
            _state.inference = disable
            try:
                return grad_wrapper(*args, **kwargs)
            finally:
                _state.inference = previous

        return wrapper  # type: ignore[return-value]


class set_grad_enabled(_GradMode):  # noqa: N801
    """Sets grad mode now (as a function), for a block (as a context manager), or for each call of a
    decorated function."""

    def __init__(self, mode: bool) -> None:
        self._mode = bool(mode)
        self._previous = _state.enabled
        _state.enabled = self._mode

    def __enter__(self) -> None:
        pass

    def __call__(self, func: F) -> F:
        # Used as a decorator, the mode applies inside calls only: undo the switch __init__ made.
        _state.enabled = self._previous
        return super().__call__(func)
