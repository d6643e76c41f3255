"""Public functions that compute tensors without running an op: comparisons, argmax, one_hot...

numdiff.compile traces a function by recording the ops it runs (``Function.apply``). These
functions run none, so each is marked with :func:`host_function`: while a trace is active, a call
records itself as a step of the traced graph, which every later call reruns on its own arrays.
Marking the functions themselves also catches one the user imported by name (``from numdiff
import eq``); patching the modules that hold them during a trace, as before, missed those, and a
compiled function then returned the first call's comparison on every call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

TRACERS: list = []
"""numdiff.compile's stack of active tracers, innermost last (None while a trace is suspended)."""


def host_function(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, recorded as a step of the active trace when one is recording."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        if TRACERS and TRACERS[-1] is not None:
            TRACERS[-1].record_host(function, args, kwargs, result)
        return result

    return call


def random_function(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, which draws from a random generator: while a trace records, the active tracer
    runs it (``Tracer.random_call``) as a step that draws afresh on every call of the compiled
    function, in the order eager mode draws."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        if TRACERS and TRACERS[-1] is not None:
            return TRACERS[-1].random_call(function, args, kwargs)
        return function(*args, **kwargs)

    return call
