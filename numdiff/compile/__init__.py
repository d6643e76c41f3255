"""numdiff.compile: trace a function or Module once, run its forward and backward as generated code.

Modelled on ``torch.compile``. The first call per input signature runs the function eagerly
while recording every op call (trace.py), traces the backward by running each recorded op's own
backward (backward.py), and generates one forward and one backward function (codegen.py,
fusion.py, program.py). Later calls run the generated pair; on the tape the whole call is one
node (region.py), so ``loss.backward()``, ``.grad`` accumulation, hooks and optimizers work as in
eager mode. See README ("Compiling a model") for the guards and what falls back to eager.

>>> model = numdiff.compile(numdiff.nn.Linear(4, 2))
>>> loss = model(numdiff.randn(3, 4)).sum()
>>> loss.backward()
"""

from __future__ import annotations

from typing import Any

from numdiff.compile.compiled import RECOMPILE_LIMIT, CompiledFunction
from numdiff.compile.module import CompiledModule
from numdiff.compile.trace import GraphBreakError, UnsupportedInCompileError
from numdiff.nn import Module


def compile(fn_or_module: Any, *, dynamic: bool = False) -> Any:
    """Compile a function (returns a function) or a Module (returns a module sharing its Parameters).

    ``dynamic`` is accepted for torch.compile compatibility; every new shape retraces.

    >>> f = numdiff.compile(lambda x: (x.exp() * 2).sum())
    >>> f(numdiff.ones(3))
    tensor(16.3097)
    """
    if isinstance(fn_or_module, Module):
        return CompiledModule(fn_or_module, dynamic=dynamic)
    if not callable(fn_or_module):
        raise TypeError(f"numdiff.compile expects a function or a Module, got {type(fn_or_module).__name__}")
    compiled = CompiledFunction(fn_or_module, dynamic=dynamic)

    def compiled_function(*args: Any, **kwargs: Any) -> Any:
        return compiled(*args, **kwargs)

    compiled_function.__wrapped__ = fn_or_module
    compiled_function.__name__ = getattr(fn_or_module, "__name__", "compiled_function")
    compiled_function.__doc__ = getattr(fn_or_module, "__doc__", None)
    compiled_function.compiled = compiled
    return compiled_function


__all__ = [
    "RECOMPILE_LIMIT", "CompiledFunction", "CompiledModule", "GraphBreakError",
    "UnsupportedInCompileError", "compile",
]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
