"""PyTorch's ``torch.jit`` (TorchScript) names that eager programs touch, for ``numdiff.jit``.

Model code asks ``torch.jit.is_scripting()`` and tools test ``isinstance(m, torch.jit.ScriptModule)``;
eager code decorates methods with ``@torch.jit.ignore`` / ``unused`` / ``export``. In eager mode
these are what PyTorch makes them (False, never an instance, the function unchanged). Compiling to
TorchScript (``script``, ``trace``, ``load``) is not part of numdiff and raises on use.
"""

from __future__ import annotations

from typing import Any, TypeVar

_F = TypeVar("_F")

__all__ = [
    "Final", "ScriptFunction", "ScriptModule", "export", "ignore", "is_scripting", "is_tracing", "script", "trace",
    "unused",
]

Final = Any  # torch.jit.Final[int] annotates a constant; eager code ignores it


def is_scripting() -> bool:
    """False: numdiff runs Python eagerly, never as TorchScript."""
    return False


def is_tracing() -> bool:
    """False: numdiff has no TorchScript tracer."""
    return False


class ScriptModule:
    """The class of TorchScript modules; numdiff makes none, so ``isinstance(m, ScriptModule)`` is False."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(_NO_TORCHSCRIPT.format(what="ScriptModule"))


class ScriptFunction:
    """The class of TorchScript functions; numdiff makes none."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(_NO_TORCHSCRIPT.format(what="ScriptFunction"))


def ignore(fn: Any = None, **kwargs: Any) -> Any:
    """Leave `fn` to Python when scripting; in eager mode it is `fn` itself (also as ``@ignore(drop=...)``)."""
    return (lambda f: f) if fn is None else fn


def unused(fn: _F) -> _F:
    """Mark `fn` as not scripted; in eager mode it is `fn` itself."""
    return fn


def export(fn: _F) -> _F:
    """Mark `fn` as a TorchScript entry point; in eager mode it is `fn` itself."""
    return fn


_NO_TORCHSCRIPT = (
    "numdiff.jit.{what}: TorchScript is not part of numdiff (it runs Python eagerly); "
    "to compile a model use numdiff.compile(model), or numdiff.onnx.export to hand it to another runtime"
)


def script(obj: Any, *args: Any, **kwargs: Any) -> Any:
    """Raises: TorchScript is not part of numdiff (use numdiff.compile)."""
    raise NotImplementedError(_NO_TORCHSCRIPT.format(what="script"))


def trace(func: Any, *args: Any, **kwargs: Any) -> Any:
    """Raises: TorchScript is not part of numdiff (use numdiff.compile)."""
    raise NotImplementedError(_NO_TORCHSCRIPT.format(what="trace"))
