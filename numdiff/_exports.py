"""numdiff.*'s exported functions, each in one wrapper frame (numdiff.overrides.exported) that does
what its export needs: the ``__numdiff_function__`` hand-over for numdiff.fx's Proxy, PyTorch's
``out=`` keyword, and NumPy's ``axis``/``keepdims`` names. The functions inside numdiff call the
implementations, which none of these wrappers touch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numdiff._numpy_names import function_renames
from numdiff._out_argument import OUT_FUNCTIONS, write_out
from numdiff.overrides import exported, protocol_candidates

__all__ = ["public_functions"]


def __dir__() -> list[str]:
    return sorted(__all__)


def public_functions(namespace: dict[str, Any], module_prefixes: tuple[str, ...]) -> dict[str, Callable[..., Any]]:
    """The functions of `namespace` that need a wrapper at export, each wrapped once: the protocol
    check for those of `module_prefixes` that do not honour it themselves, out= for OUT_FUNCTIONS,
    the NumPy names for those PyTorch lets take them. Aliases with the same needs (multiply and
    mul) share one wrapper, so they stay the same object."""
    protocol = set(protocol_candidates(namespace, module_prefixes))
    out = {name for name in OUT_FUNCTIONS if callable(namespace.get(name))}
    wrapped: dict[tuple, Callable[..., Any]] = {}
    variants = {}
    for name, fn in namespace.items():
        needs = (name in protocol, function_renames(name, fn), name in out)
        if not any(needs):
            continue
        wrapper = wrapped.get((id(fn), needs))
        if wrapper is None:
            wrapper = wrapped[id(fn), needs] = exported(fn, needs[0], needs[1], write_out if needs[2] else None)
        variants[name] = wrapper
    return variants
