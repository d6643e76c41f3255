"""Public functions that compute tensors without running an op: comparisons, argmax, one_hot...

These functions run no `Function.apply`, so each is marked with :func:`host_function`, which is
their door to the interpreter stack (numdiff.autograd.transform_state): while an interpreter is
active in the calling thread, the call goes to the innermost one. numdiff.compile's tracer then
records it as a step of the traced graph, which every later call reruns on its own arrays.
Marking the functions themselves also catches one the user imported by name (``from numdiff
import eq``), where patching the modules that hold them missed it.

A host function marked ``elementwise=True`` (comparisons, logical ops, isnan...) says how vmap
runs it: once on whole batches, the operands aligned (numdiff._batched.VmapLevel), so its
body never needs to ask whether an operand is batched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from numdiff.autograd.transform_state import anywhere, transforms

ELEMENTWISE: dict[Callable[..., Any], Callable[..., Any]] = {}
"""Elementwise host functions: the function -> its public (door) form, which vmap reruns on the
batches so that operands batched at outer levels come through the door again."""


def host_function(function: Callable[..., Any] | None = None, *, elementwise: bool = False) -> Any:
    """`function`, handed to this thread's innermost interpreter when one is active. With
    `elementwise`, each result element depends only on the operands' elements at its position
    (after broadcasting), so vmap may run it on whole batches."""
    if function is None:
        return functools.partial(host_function, elementwise=elementwise)

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        if anywhere.levels:
            top = transforms.interpreter
            if top is not None:
                return top.host_call(function, args, kwargs)
        return function(*args, **kwargs)

    if elementwise:
        ELEMENTWISE[function] = call
    return call


def random_function(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, which draws from a random generator, handed to this thread's innermost
    interpreter when one is active (``Interpreter.random_call``): numdiff.compile's tracer records
    it as a step that draws afresh on every call of the compiled function, in eager's order."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        if anywhere.levels:
            top = transforms.interpreter
            if top is not None:
                return top.random_call(function, args, kwargs)
        return function(*args, **kwargs)

    return call
