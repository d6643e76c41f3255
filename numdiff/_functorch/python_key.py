"""``torch._functorch.python_key``: make_fx, which numdiff does not have.

make_fx traces a function into an FX graph of ATen ops; numdiff has no ATen layer to trace to.
The name imports (``import functorch`` imports it), and calling it says what to use instead.

>>> from numdiff._functorch.python_key import make_fx
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["make_fx"]


def __dir__() -> list[str]:
    return sorted(__all__)


def make_fx(f: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., Any]:
    """Raises: numdiff traces no ATen graphs (see the module docstring)."""
    raise NotImplementedError(
        f"make_fx({getattr(f, '__name__', type(f).__name__)}): numdiff has no ATen-level graph to trace a "
        "function into; to compile a function use numdiff.compile, and to transform it use numdiff.func"
    )
