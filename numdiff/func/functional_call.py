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


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None, kwargs: Mapping | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Call `module` with some parameters and buffers replaced by the given tensors, as torch.func.

    With `tie_weights` (the default, as in PyTorch) a value given for one name of a tensor the module
    holds under several names (an embedding tied to the output layer) replaces it under all of them;
    two different values for tied names raise. The module's own tensors are put back afterwards,
    also when the call raises.

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
    if tie_weights:
        replacements = _tied(module, replacements)
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


def _tied(module: Any, replacements: dict) -> dict:
    """`replacements` with each value also under the other names of the tensor it replaces."""
    names_of: dict[int, list[str]] = {}
    for table in (module.named_parameters(remove_duplicate=False), module.named_buffers(remove_duplicate=False)):
        for name, tensor in table:
            names_of.setdefault(id(tensor), []).append(name)
    tied = dict(replacements)
    for names in names_of.values():
        given = [name for name in names if name in replacements]
        if len(names) < 2 or not given:
            continue
        values = {id(replacements[name]): replacements[name] for name in given}
        if len(values) > 1:
            raise ValueError(
                f"functional_call: different values given for {given}, which are tied in {type(module).__name__} "
                "(one tensor under several names); pass one value, or tie_weights=False to set each name on its own"
            )
        (value,) = values.values()
        for name in names:
            tied[name] = value
    return tied
