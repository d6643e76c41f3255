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

import warnings
from typing import Any

from numdiff.compile.compiled import RECOMPILE_LIMIT, CompiledFunction
from numdiff.compile.module import CompiledModule
from numdiff.compile.trace import GraphBreakError, UnsupportedInCompileError
from numdiff.nn import Module

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
"""torch.compile's modes. The max-autotune ones also time each large convolution's candidate kernels
when a program is built and keep the fastest (compile/conv_tuning.py); the others run the kernels
eager's routing rules pick. numdiff has no CUDA graphs, so reduce-overhead is the default."""

EAGER_BACKENDS = ("eager", "aot_eager")
"""torch.compile's backends that run the captured graph eagerly: numdiff runs the function itself."""


def compile(model: Any = None, *, fullgraph: bool = False, dynamic: bool | None = None, backend: Any = "inductor",
            mode: str | None = None, options: dict | None = None, disable: bool = False) -> Any:  # fmt: skip
    """Compile a function (returns a function) or a Module (returns a module sharing its Parameters).

    The signature is ``torch.compile``'s: called without a model it returns a decorator;
    ``disable=True`` returns the model itself; ``fullgraph=True`` raises where numdiff would
    otherwise fall back to eager with a warning; ``mode`` is one of `MODES` (or ``options``, a dict,
    where ``{"max_autotune": True}`` means the same as that mode; other keys are inductor settings
    numdiff has no counterpart for, and it warns, naming them); ``backend`` is ``"inductor"`` or
    one of `EAGER_BACKENDS`. ``dynamic`` is accepted; every new shape retraces.

    >>> f = numdiff.compile(lambda x: (x.exp() * 2).sum())
    >>> f(numdiff.ones(3))
    tensor(16.3097)
    """
    autotune = _autotune_setting(mode, options)
    if not isinstance(backend, str) or backend not in ("inductor", *EAGER_BACKENDS):
        raise ValueError(
            f"numdiff.compile: backend must be 'inductor' or one of {EAGER_BACKENDS}, got {backend!r}; numdiff "
            "generates its own code and cannot hand a graph to another compiler backend"
        )
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)  # fmt: skip
    if disable:
        return model
    if isinstance(model, Module):
        compiled_module = CompiledModule(model, dynamic=bool(dynamic))
        _configure(compiled_module.compiled, backend, fullgraph, autotune)
        return compiled_module
    if not callable(model):
        raise TypeError(f"numdiff.compile expects a function or a Module, got {type(model).__name__}")
    compiled = CompiledFunction(model, dynamic=bool(dynamic))
    _configure(compiled, backend, fullgraph, autotune)

    def compiled_function(*args: Any, **kwargs: Any) -> Any:
        return compiled(*args, **kwargs)

    compiled_function.__wrapped__ = model
    compiled_function.__name__ = getattr(model, "__name__", "compiled_function")
    compiled_function.__doc__ = getattr(model, "__doc__", None)
    compiled_function.compiled = compiled
    return compiled_function


def _autotune_setting(mode: str | None, options: dict | None) -> bool:
    """Whether programs time their convolutions' candidates, from torch.compile's mode or options."""
    if mode is not None and options is not None:
        raise RuntimeError("numdiff.compile: either mode or options can be given, not both (as torch.compile)")
    if mode is not None:
        if mode not in MODES:
            raise RuntimeError(f"numdiff.compile: unrecognized mode={mode!r}, should be one of: {', '.join(MODES)}")
        return mode.startswith("max-autotune")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise TypeError(f"numdiff.compile: options must be a dict, got {type(options).__name__}")
    ignored = sorted(str(key) for key in options if key != "max_autotune")
    if ignored:
        warnings.warn(f"numdiff.compile: options {ignored} are inductor settings numdiff has no counterpart "
                      "for; they are ignored", stacklevel=3)  # fmt: skip
    return bool(options.get("max_autotune", False))


def _configure(compiled: CompiledFunction, backend: str, fullgraph: bool, autotune: bool) -> None:
    compiled.autotune = autotune
    if backend in EAGER_BACKENDS:
        compiled.eager_reason = f"backend={backend!r}"  # runs the function itself, without a warning
    else:
        compiled.fullgraph = bool(fullgraph)


__all__ = [
    "EAGER_BACKENDS", "MODES", "RECOMPILE_LIMIT", "CompiledFunction", "CompiledModule", "GraphBreakError",
    "UnsupportedInCompileError", "compile",
]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
