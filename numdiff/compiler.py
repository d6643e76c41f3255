"""numdiff.compiler: ``torch.compiler``'s calls that programs make around compiled code, mapped
onto numdiff.compile.

numdiff.compile keeps each compiled function's traces on that function (there is no
process-wide graph cache to clear), so `reset` has nothing to drop: a function compiled after it
traces afresh, as after ``torch.compiler.reset()``. `is_compiling` says whether numdiff.compile
is tracing the code that calls it.
"""

from __future__ import annotations

from numdiff.compile.trace import tracing_now

__all__ = ["is_compiling", "is_dynamo_compiling", "reset"]


def reset() -> None:
    """Forget compiled code: functions compiled from now on trace afresh (numdiff keeps traces per
    compiled function, so there is no shared cache to clear).

    >>> numdiff.compiler.reset()
    """


def is_compiling() -> bool:
    """Whether the caller runs inside numdiff.compile's trace (True) or eagerly (False).

    >>> numdiff.compiler.is_compiling()
    False
    """
    return tracing_now()


def is_dynamo_compiling() -> bool:
    """PyTorch's name for `is_compiling` when the tracer is Dynamo; the same question here."""
    return tracing_now()
