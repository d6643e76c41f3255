"""Thread-local grad mode: `no_grad`, `enable_grad`, `set_grad_enabled`, `inference_mode`."""

from __future__ import annotations

import functools
import inspect
import sys
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
    """Sets grad mode for a `with` block, or for every call of a decorated function.

    As a decorator it is used with or without parentheses (``@no_grad`` and ``@no_grad()``, as
    PyTorch 2 allows), and a generator function keeps the mode each time it resumes, not only
    while the generator object is made (PyTorch's decorators wrap generators the same way).
    """

    _mode: bool

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], bool):
            return cls()(args[0])
        return super().__new__(cls)

    def clone(self) -> _GradMode:
        """A fresh context manager of the same mode (each decorated call enters its own)."""
        return type(self)()

    def __enter__(self) -> None:
        self._previous = _state.enabled
        _state.enabled = self._mode

    def __exit__(self, *exc_info: object) -> None:
        _state.enabled = self._previous

    def __call__(self, func: F) -> F:
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def _wrap_generator(self, func: F) -> F:
        @functools.wraps(func)
        def generator(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                gen = func(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException:
                        with self.clone():
                            response = gen.throw(*sys.exc_info())
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value

        return generator  # type: ignore[return-value]


class no_grad(_GradMode):  # noqa: N801 - PyTorch's name
    """Ops inside record nothing: ``with numdiff.no_grad(): w -= lr * w.grad``."""

    _mode = False


class enable_grad(_GradMode):  # noqa: N801
    """Turns recording back on inside a `no_grad` block."""

    _mode = True


class inference_mode(_GradMode):  # noqa: N801
    """Like `no_grad`; numdiff has no separate inference tensors.

    ``inference_mode(False)`` turns grad mode on inside, also within `no_grad`, as PyTorch's does
    (its InferenceMode guard sets grad mode to the opposite of the flag).
    """

    def __init__(self, mode: bool = True) -> None:
        self._disable = bool(mode)
        self._mode = not self._disable

    def clone(self) -> inference_mode:
        return inference_mode(self._disable)

    def __enter__(self) -> None:
        self._previous_inference = _state.inference
        _state.inference = self._disable
        super().__enter__()

    def __exit__(self, *exc_info: object) -> None:
        super().__exit__(*exc_info)
        _state.inference = self._previous_inference


class set_grad_enabled(_GradMode):  # noqa: N801
    """Sets grad mode now (as a function), for a block (as a context manager), or for each call of a
    decorated function."""

    def __new__(cls, mode: bool) -> set_grad_enabled:
        return object.__new__(cls)

    def __init__(self, mode: bool) -> None:
        self._mode = bool(mode)
        self._previous = _state.enabled
        _state.enabled = self._mode

    def clone(self) -> set_grad_enabled:
        return set_grad_enabled(self._mode)

    def __enter__(self) -> None:
        pass

    def __call__(self, func: F) -> F:
        # Used as a decorator, the mode applies inside calls only: undo the switch __init__ made.
        _state.enabled = self._previous
        return super().__call__(func)
