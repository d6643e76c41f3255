"""Module's state_dict hooks and extra state, PyTorch's contracts: pre- and post-hooks of
``state_dict()`` and of ``load_state_dict()``, and ``get_extra_state``/``set_extra_state``, saved
under ``<prefix>_extra_state`` when a class overrides ``get_extra_state``.

The registries are made on first registration, so modules pickled before they existed (whole-model
checkpoints) still load and save."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from numdiff.autograd.hooks import RemovableHandle

EXTRA_STATE_KEY = "_extra_state"


def hooks_of(module: Any, kind: str) -> tuple:
    """The hooks of one kind a module holds, in registration order (none unless it registered some)."""
    registry = module.__dict__.get(kind)
    return tuple(registry.values()) if registry else ()


def has_extra_state(module: Any) -> bool:
    return type(module).get_extra_state is not StateDictHooks.get_extra_state


class StateDictHooks:
    """The registration methods, mixed into Module."""

    def _add_state_dict_hook(self, kind: str, hook: Callable[..., Any]) -> RemovableHandle:
        if not callable(hook):
            raise TypeError(f"{kind.strip('_')}: hook must be callable, got {type(hook).__name__}")
        registry = self.__dict__.get(kind)
        if registry is None:
            registry = OrderedDict()
            object.__setattr__(self, kind, registry)
        handle = RemovableHandle(registry)
        registry[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(module, prefix, keep_vars)`` before this module's entries are collected."""
        return self._add_state_dict_hook("_state_dict_pre_hooks", hook)

    def register_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(module, state_dict, prefix, local_metadata)`` once this module's entries and its
        children's are in `state_dict`; the hook edits it in place and must return None."""
        return self._add_state_dict_hook("_state_dict_post_hooks", hook)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before anything is loaded, as PyTorch calls it before this
        module's entries: it may rename or convert entries of (a copy of) the state dict, or append
        a message to `error_msgs` to refuse the load."""
        return self._add_state_dict_hook("_load_state_dict_pre_hooks", hook)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(module, incompatible_keys)`` after loading and before strict's check; removing
        keys from ``incompatible_keys.missing_keys`` or ``.unexpected_keys`` excuses them."""
        return self._add_state_dict_hook("_load_state_dict_post_hooks", hook)

    def get_extra_state(self) -> Any:
        """Override to save any picklable value with the module's state dict (as ``_extra_state``)."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called: override "
            "get_extra_state() and set_extra_state() together to save extra state"
        )

    def set_extra_state(self, state: Any) -> None:
        """Override to take back the value `get_extra_state` returned, when a state dict is loaded."""
        raise RuntimeError(
            f"{type(self).__name__}.set_extra_state() was reached for a state dict that holds extra state: "
            "override set_extra_state() together with get_extra_state()"
        )
