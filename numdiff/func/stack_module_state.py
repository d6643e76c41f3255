"""stack_module_state: the parameters and buffers of several same-shaped models, stacked, for
ensembling with vmap over functional_call (torch.func's model-ensembling recipe)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.ops.joining import stack
from numdiff.tensor import Tensor


def stack_module_state(models: Sequence[Any]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """``(params, buffers)``: for each name, the models' tensors stacked along a new dim 0. Stacked
    parameters are new leaves (requiring grad where the models' do), so an optimizer can train
    the whole ensemble; the models themselves are not changed.

    >>> params, buffers = stack_module_state([Net() for _ in range(4)])
    >>> vmap(lambda p, b, x: functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))(params, buffers, x)
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    kinds = {type(m) for m in models}
    if len(kinds) != 1:
        raise RuntimeError(
            "stack_module_state: Expected all models to be of the same class, got "
            + ", ".join(sorted(k.__name__ for k in kinds))
        )
    if len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be either all in training mode or all in eval mode")
    names = [list(dict(m.named_parameters())) for m in models]
    if any(n != names[0] for n in names):
        raise RuntimeError(f"stack_module_state: the models' parameter names differ: {names[0]} vs {next(n for n in names if n != names[0])}")
    params: dict[str, Tensor] = {}
    for name in names[0]:
        tensors = [dict(m.named_parameters())[name] for m in models]
        _check_shapes("parameter", name, tensors)
        with no_grad():
            stacked = stack([t.detach() for t in tensors])
        params[name] = stacked.requires_grad_(tensors[0].requires_grad)
    buffers: dict[str, Tensor] = {}
    for name, _ in models[0].named_buffers():
        tensors = [dict(m.named_buffers())[name] for m in models]
        _check_shapes("buffer", name, tensors)
        with no_grad():
            buffers[name] = stack([t.detach() for t in tensors])
    return params, buffers


def _check_shapes(kind: str, name: str, tensors: list[Tensor]) -> None:
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) != 1:
        raise RuntimeError(f"stack_module_state: {kind} {name!r} has different shapes across the models: {sorted(shapes)}")
