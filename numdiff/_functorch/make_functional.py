"""functorch's make_functional family: a module as a function of its parameters (and buffers).

The stateless copy of the module is called with the given tensors swapped in for its own
(numdiff.func.functional_call), so torch.func's transforms differentiate with respect to them.

>>> func, params = make_functional(numdiff.nn.Linear(3, 2))
>>> func(params, numdiff.randn(4, 3)).shape
numdiff.Size([4, 2])
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

from numdiff.func.functional_call import functional_call
from numdiff.func.stack_module_state import stack_module_state
from numdiff.nn.modules.module import Module
from numdiff.tensor import Tensor

__all__ = [
    "FunctionalModule",
    "FunctionalModuleWithBuffers",
    "combine_state_for_ensemble",
    "make_functional",
    "make_functional_with_buffers",
]


def _check_module(caller: str, model: Any) -> None:
    if not isinstance(model, Module):
        raise TypeError(f"{caller}: expected an nn.Module, got a {type(model).__name__}")


def _detached(tensors: Iterable[Tensor], disable_autograd_tracking: bool) -> tuple[Tensor, ...]:
    if disable_autograd_tracking:
        return tuple(t.detach() for t in tensors)
    return tuple(tensors)


class FunctionalModule(Module):
    """What make_functional returns: ``func(params, *args)`` calls the module with `params`."""

    def __init__(self, stateless_model: Module, param_names: tuple[str, ...]) -> None:
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = param_names

    def forward(self, params: Sequence[Tensor], *args: Any, **kwargs: Any) -> Any:
        params = tuple(params)
        if len(params) != len(self.param_names):
            raise ValueError(
                f"FunctionalModule: expected {len(self.param_names)} parameters ({', '.join(self.param_names)}), "
                f"got {len(params)}"
            )
        return functional_call(self.stateless_model, dict(zip(self.param_names, params)), args, kwargs)


class FunctionalModuleWithBuffers(Module):
    """What make_functional_with_buffers returns: ``func(params, buffers, *args)``."""

    def __init__(self, stateless_model: Module, param_names: tuple[str, ...], buffer_names: tuple[str, ...]) -> None:
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = param_names
        self.buffer_names = buffer_names

    def forward(self, params: Sequence[Tensor], buffers: Sequence[Tensor], *args: Any, **kwargs: Any) -> Any:
        params, buffers = tuple(params), tuple(buffers)
        if len(params) != len(self.param_names) or len(buffers) != len(self.buffer_names):
            raise ValueError(
                f"FunctionalModuleWithBuffers: expected {len(self.param_names)} parameters and "
                f"{len(self.buffer_names)} buffers, got {len(params)} and {len(buffers)}"
            )
        state = {**dict(zip(self.param_names, params)), **dict(zip(self.buffer_names, buffers))}
        return functional_call(self.stateless_model, state, args, kwargs)


def make_functional(model: Module, disable_autograd_tracking: bool = False) -> tuple[FunctionalModule, tuple]:
    """``(func, params)``: func(params, *args) runs a copy of `model` with `params` as its parameters.

    >>> func, params = make_functional(numdiff.nn.Linear(3, 2))
    """
    _check_module("make_functional", model)
    buffers = [name for name, _ in model.named_buffers()]
    if buffers:
        raise RuntimeError(
            f"make_functional: the model has buffers ({', '.join(buffers)}); use make_functional_with_buffers"
        )
    copied = copy.deepcopy(model)
    names, params = zip(*copied.named_parameters()) if any(True for _ in copied.parameters()) else ((), ())
    return FunctionalModule(copied, tuple(names)), _detached(params, disable_autograd_tracking)


def make_functional_with_buffers(
    model: Module, disable_autograd_tracking: bool = False
) -> tuple[FunctionalModuleWithBuffers, tuple, tuple]:
    """``(func, params, buffers)``: func(params, buffers, *args) runs a copy of `model` with them.

    >>> func, params, buffers = make_functional_with_buffers(numdiff.nn.BatchNorm1d(3))
    """
    _check_module("make_functional_with_buffers", model)
    copied = copy.deepcopy(model)
    named_params = list(copied.named_parameters())
    named_buffers = list(copied.named_buffers())
    func = FunctionalModuleWithBuffers(
        copied, tuple(n for n, _ in named_params), tuple(n for n, _ in named_buffers)
    )
    return func, _detached((p for _, p in named_params), disable_autograd_tracking), tuple(b for _, b in named_buffers)


def combine_state_for_ensemble(models: Sequence[Module]) -> tuple[FunctionalModuleWithBuffers, tuple, tuple]:
    """``(func, params, buffers)`` for an ensemble of same-shaped models: each parameter and buffer
    stacked along a new dim 0, to be run with vmap(func)(params, buffers, x).

    >>> func, params, buffers = combine_state_for_ensemble([numdiff.nn.Linear(3, 2) for _ in range(4)])
    >>> params[0].shape
    numdiff.Size([4, 2, 3])
    """
    models = list(models)
    if not models:
        raise RuntimeError("combine_state_for_ensemble: expected at least one model, got 0")
    for model in models:
        _check_module("combine_state_for_ensemble", model)
    if len({type(m) for m in models}) != 1:
        kinds = sorted({type(m).__name__ for m in models})
        raise RuntimeError(f"combine_state_for_ensemble: the models must all be of one class, got {kinds}")
    if len({m.training for m in models}) != 1:
        raise RuntimeError("combine_state_for_ensemble: the models must all be in training mode or all in eval mode")
    params, buffers = stack_module_state(models)
    func, _, _ = make_functional_with_buffers(models[0])
    return func, tuple(params[name] for name in func.param_names), tuple(buffers[name] for name in func.buffer_names)
