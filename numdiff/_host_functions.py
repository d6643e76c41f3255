"""Public functions that compute tensors without running an op: comparisons, argmax, one_hot...

These functions run no `Function.apply`, so each is marked with :func:`host_function`, which is
their door to the interpreter stack (numdiff.autograd.transform_state): while an interpreter is
active in the calling thread, the call goes to the innermost one. numdiff.compile's tracer then
records it as a step of the traced graph, which every later call reruns on its own arrays.
Marking the functions themselves also catches one the user imported by name (``from numdiff
import eq``), where patching the modules that hold them missed it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from numdiff.autograd.transform_state import anywhere, transforms


def host_function(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, handed to this thread's innermost interpreter when one is active."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        if anywhere.levels:
            top = transforms.interpreter
            if top is not None:
                return top.host_call(function, args, kwargs)
        return function(*args, **kwargs)

    return call
