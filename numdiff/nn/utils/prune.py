"""numdiff.nn.utils.prune: zero out entries of a module's tensors through a mask, as PyTorch's.

Pruning ``module.weight`` moves the parameter to ``module.weight_orig``, adds the buffer
``module.weight_mask`` and makes ``module.weight`` the plain attribute ``weight_orig * weight_mask``,
recomputed by a forward pre-hook before every call. Pruning the same tensor again combines the
masks through a PruningContainer; ``remove`` makes the pruning permanent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from numdiff.creation import ones_like
from numdiff.nn.modules.module import Module
from numdiff.nn.utils._prune_base import BasePruningMethod, PruningContainer
from numdiff.nn.utils._prune_methods import (
    CustomFromMask,
    Identity,
    L1Unstructured,
    LnStructured,
    RandomStructured,
    RandomUnstructured,
)
from numdiff.nn.utils.convert_parameters import parameters_to_vector
from numdiff.tensor import Tensor

__all__ = [
    "BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured", "PruningContainer",
    "RandomStructured", "RandomUnstructured", "custom_from_mask", "global_unstructured", "identity", "is_pruned",
    "l1_unstructured", "ln_structured", "random_structured", "random_unstructured", "remove",
]


def __dir__() -> list[str]:
    return sorted(__all__)


def identity(module: Module, name: str) -> Module:
    """Reparametrize ``module.<name>`` with an all-ones mask (prunes nothing)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    """Prune `amount` random entries of ``module.<name>``.

    >>> prune.random_unstructured(numdiff.nn.Linear(4, 3), name="weight", amount=0.3)
    """
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: int | float, importance_scores: Tensor | None = None) -> Module:
    """Prune the `amount` entries of ``module.<name>`` smallest in absolute value (or in `importance_scores`)."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    """Prune `amount` random channels of ``module.<name>`` along `dim`."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: int | float, n: Any, dim: int, importance_scores: Tensor | None = None) -> Module:
    """Prune the `amount` channels of ``module.<name>`` along `dim` with the smallest `n`-norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` where `mask` is zero."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(
    parameters: Iterable[tuple[Module, str]], pruning_method: type[BasePruningMethod], importance_scores: dict | None = None, **kwargs: Any
) -> None:
    """Prune the given (module, name) tensors together: `pruning_method` ranks all their entries at once.

    >>> prune.global_unstructured([(m.fc1, "weight"), (m.fc2, "weight")], pruning_method=prune.L1Unstructured, amount=0.2)
    """
    parameters = list(parameters)
    if not parameters:
        raise ValueError("global_unstructured: parameters is empty")
    importance_scores = importance_scores or {}
    scores = parameters_to_vector(
        [importance_scores.get((module, name), getattr(module, name)) for module, name in parameters]
    )
    default_mask = parameters_to_vector(
        [getattr(module, name + "_mask", ones_like(getattr(module, name))) for module, name in parameters]
    )
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f"global_unstructured: {pruning_method.__name__} is {method.PRUNING_TYPE} pruning, not unstructured")
    container = PruningContainer(method)
    final_mask = container.compute_mask(scores, default_mask)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        size = param.numel()
        custom_from_mask(module, name, mask=final_mask[start:start + size].view_as(param))
        start += size


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent and drop its mask and hook."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether `module` or one of its submodules has a pruning hook."""
    return any(
        isinstance(hook, BasePruningMethod) for sub in module.modules() for hook in sub._forward_pre_hooks.values()
    )
