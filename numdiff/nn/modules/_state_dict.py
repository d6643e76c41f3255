"""state_dict and load_state_dict for Module: named tensors out, checked in-place copies back in."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from numdiff.autograd.grad_mode import no_grad
from numdiff.backend import is_numpy
from numdiff.creation import from_numpy
from numdiff.nn.modules._state_dict_hooks import EXTRA_STATE_KEY, has_extra_state, hooks_of
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Tensor

if TYPE_CHECKING:
    from numdiff.nn.modules.module import Module


class IncompatibleKeys(NamedTuple):
    """What `load_state_dict` returns: the keys it expected but did not get, and the extra ones."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"


class _ExtraState(NamedTuple):
    """What load expects at a module's ``_extra_state`` key: a value for its set_extra_state."""

    module: Any


def collect(module: Module, destination: dict | None, prefix: str, keep_vars: bool, for_load: bool = False) -> OrderedDict:
    """Own parameters, own persistent buffers, own extra state, then each child's entries under
    "child."; with the state_dict hooks around (not `for_load`, which lists what a load expects)."""
    if destination is None:
        destination = OrderedDict()
    if not for_load:
        for hook in hooks_of(module, "_state_dict_pre_hooks"):
            hook(module, prefix, keep_vars)
    for name, param in module._parameters.items():
        if param is not None:
            destination[prefix + name] = param if keep_vars else param.detach()
    for name, buffer in module._buffers.items():
        if buffer is not None and name not in module._non_persistent_buffers_set:
            destination[prefix + name] = buffer if keep_vars else buffer.detach()
    if has_extra_state(module):
        destination[prefix + EXTRA_STATE_KEY] = _ExtraState(module) if for_load else module.get_extra_state()
    for name, child in module._modules.items():
        if child is not None:
            collect(child, destination, prefix + name + ".", keep_vars, for_load)
    if not for_load:
        for hook in hooks_of(module, "_state_dict_post_hooks"):
            if hook(module, destination, prefix, {}) is not None:
                raise RuntimeError("state_dict post-hook must return None: edit the state dict it is given in place")
    return destination


def _quoted(keys: list[str]) -> str:
    return ", ".join(f'"{k}"' for k in keys)


def _as_tensor(key: str, value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if is_numpy(value):
        return from_numpy(value)
    kind = type(value)
    # Another library's tensor class is often also called Tensor: name its module too.
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    hint = "; convert it with numdiff.tensor(value.numpy())" if hasattr(value, "numpy") else ""
    raise TypeError(
        f'load_state_dict: the entry "{key}" must be a numdiff Tensor (or a NumPy array), got {name}{hint}'
    )


def load(module: Module, state_dict: Mapping, strict: bool, assign: bool = False) -> IncompatibleKeys:
    """Run the load pre-hooks, check every key and shape, then copy all values under no_grad (all or
    nothing, unless a post-hook is registered: strict's check of the keys then follows it); with
    `assign`, put the state dict's tensors themselves in place instead (see :func:`_assign`)."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"load_state_dict: expected state_dict to be dict-like, got {type(state_dict).__name__}")
    state_dict = OrderedDict(state_dict)  # the pre-hooks edit a copy, as PyTorch's
    errors: list[str] = []
    modules = list(module.named_modules())
    for name, sub in modules:
        for hook in hooks_of(sub, "_load_state_dict_pre_hooks"):
            hook(sub, state_dict, name + "." if name else "", {}, strict, [], [], errors)
    expected = collect(module, None, "", keep_vars=True, for_load=True)
    missing = [key for key in expected if key not in state_dict]
    unexpected = [key for key in state_dict if key not in expected]
    # Post-hooks may excuse keys, so with any registered strict's check waits until they have run.
    post_hooks = [(sub, hook) for _, sub in modules for hook in hooks_of(sub, "_load_state_dict_post_hooks")]
    if strict and not post_hooks:
        errors.extend(_strict_errors(missing, unexpected))
    pairs, extra_states = [], []
    for key, target in expected.items():
        if key not in state_dict:
            continue
        if isinstance(target, _ExtraState):
            extra_states.append((target.module, state_dict[key]))
            continue
        value = _as_tensor(key, state_dict[key])
        if tuple(value.shape) != tuple(target.shape):
            errors.append(
                f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} from checkpoint, "
                f"the shape in current model is {tuple(target.shape)}."
            )
        pairs.append((key, target, value))
    if errors:
        raise RuntimeError(
            f"Error(s) in loading state_dict for {type(module).__name__}:\n\t" + "\n\t".join(errors)
        )
    with no_grad():
        for key, target, value in pairs:
            if assign:
                _assign(module, key, target, value)
            else:
                if target.device.type == "meta" and value.device.type != "meta":
                    warnings.warn(
                        f"for {key}: copying from a non-meta parameter in the checkpoint to a meta parameter in "
                        "the current model, which is a no-op (a meta tensor holds no values). Did you mean to "
                        "pass `assign=True` to assign items in the state dictionary to their corresponding key "
                        "in the module instead of copying them in place?", UserWarning, stacklevel=3,
                    )
                target.copy_(value)
    for owner, state in extra_states:
        owner.set_extra_state(state)
    keys = IncompatibleKeys(missing, unexpected)
    for sub, hook in post_hooks:
        if hook(sub, keys) is not None:
            raise RuntimeError("load_state_dict post-hook must return None: edit incompatible_keys in place")
    errors = _strict_errors(keys.missing_keys, keys.unexpected_keys) if strict and post_hooks else []
    if errors:
        raise RuntimeError(f"Error(s) in loading state_dict for {type(module).__name__}:\n\t" + "\n\t".join(errors))
    return keys


def _strict_errors(missing: list[str], unexpected: list[str]) -> list[str]:
    errors = []
    if unexpected:
        errors.append(f"Unexpected key(s) in state_dict: {_quoted(unexpected)}.")
    if missing:
        errors.append(f"Missing key(s) in state_dict: {_quoted(missing)}.")
    return errors


def _assign(module: Module, key: str, target: Tensor, value: Tensor) -> None:
    """Make `value` the tensor at `key`, as PyTorch's assign=True: it keeps its own dtype, device
    and memory; a parameter stays a Parameter and keeps the module's requires_grad."""
    *path, name = key.split(".")
    owner = module
    for part in path:
        owner = owner._modules[part]
    if name in owner._parameters:
        if not isinstance(value, Parameter):
            value = Parameter(value.detach(), requires_grad=target.requires_grad)
        elif value.requires_grad != target.requires_grad:
            value.requires_grad_(target.requires_grad)
        owner._parameters[name] = value
    else:
        owner._buffers[name] = value
