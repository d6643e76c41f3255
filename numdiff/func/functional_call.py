"""functional_call: run a module with parameters and buffers given as a dict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from numdiff.tensor import Tensor


def _owner(module: Any, name: str) -> tuple[Any, str, str]:
    """(submodule, attribute, 'parameter' | 'buffer') for a dotted state name."""
    *path, attribute = name.split(".")
    owner = module
    for part in path:
        child = owner._modules.get(part) if hasattr(owner, "_modules") else None
        if child is None:
            raise KeyError(f"functional_call: {name!r} names no submodule of {type(module).__name__} (at {part!r})")
        owner = child
    if attribute in owner._parameters:
        return owner, attribute, "_parameters"
    if attribute in owner._buffers:
        return owner, attribute, "_buffers"
    raise KeyError(f"functional_call: {type(module).__name__} has no parameter or buffer named {name!r}")


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None, kwargs: Mapping | None = None, *, strict: bool = False) -> Any:
    """Call `module` with some parameters and buffers replaced by the given tensors, as torch.func.

    The module's own tensors are put back afterwards, also when the call raises.

    >>> params = {k: v.detach() for k, v in model.named_parameters()}
    >>> numdiff.func.functional_call(model, params, (x,))
    """
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, Mapping):
        dicts = (dicts,)
    replacements: dict[str, Any] = {}
    for mapping in dicts:
        for key, value in mapping.items():
            if key in replacements:
                raise ValueError(f"functional_call: {key!r} is given more than once")
            if not isinstance(value, Tensor):
                raise TypeError(f"functional_call: the value for {key!r} must be a Tensor, got {type(value).__name__}")
            replacements[key] = value
    if strict:
        expected = {name for name, _ in module.named_parameters()} | {name for name, _ in module.named_buffers()}
        missing = sorted(expected - set(replacements))
        if missing:
            raise KeyError(f"functional_call(strict=True): no value given for {missing}")
    originals = []
    try:
        for key, value in replacements.items():
            owner, attribute, table = _owner(module, key)
            originals.append((getattr(owner, table), attribute, getattr(owner, table)[attribute]))
            getattr(owner, table)[attribute] = value
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for table, attribute, original in reversed(originals):
            table[attribute] = original
