"""Reverse-mode autodiff: the tape engine, the Function contract, grad modes and checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from numdiff.autograd import graph
from numdiff.autograd.anomaly import AnomalyError, detect_anomaly, set_detect_anomaly
from numdiff.autograd.function import (
    Function,
    SavedTensorFreedError,
    SavedTensorModifiedError,
)
from numdiff.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from numdiff.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from numdiff.autograd.variable import Variable


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _tensors(op: str, what: str, items: Any) -> list:
    items = _as_list(items)
    for index, item in enumerate(items):
        if not isinstance(item, Variable):  # every Tensor is a Variable
            raise TypeError(f"{op}: {what} must be Tensors (or a sequence of them), but item {index} is a {type(item).__name__}")
    return items


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """d(outputs)/d(inputs), returned as a tuple; no `.grad` is touched.

    With `is_grads_batched`, each grad_output holds a batch of them along its first dimension
    and each result is the batch of vector-Jacobian products. With `materialize_grads`, an
    input the outputs do not use gets zeros instead of None.

    >>> x = numdiff.tensor(3.0, requires_grad=True)
    >>> (dx,) = numdiff.autograd.grad(x**3, x, create_graph=True)
    >>> numdiff.autograd.grad(dx, x)   # second derivative 6x
    (tensor(18.),)
    """
    from numdiff.autograd.engine import run_backward
    from numdiff.creation import zeros_like

    if materialize_grads and allow_unused is False:
        raise ValueError("grad: materialize_grads=True needs allow_unused=True or left out, got allow_unused=False")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _tensors("grad", "outputs", outputs)
    inputs = _tensors("grad", "inputs", inputs)
    grad_outputs = [None] * len(outputs) if grad_outputs is None else _as_list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        result = _batched_grads(run_backward, outputs, grad_outputs, retain_graph, create_graph, inputs, allow_unused)
    else:
        result = run_backward(
            outputs, grad_outputs, retain_graph, create_graph, inputs=inputs, capture=True, allow_unused=allow_unused
        )
    if materialize_grads:
        result = tuple(
            zeros_like(x, requires_grad=create_graph) if r is None else r for r, x in zip(result, inputs)
        )
    return result


def _batched_grads(
    run_backward: Any, outputs: list, grad_outputs: list, retain_graph: bool, create_graph: bool, inputs: list, allow_unused: bool
) -> tuple:
    """grad's results for each row of the batched grad_outputs, stacked along a new first
    dimension. PyTorch runs the rows under vmap; one backward per row gives the same numbers."""
    from numdiff.ops.shape import stack

    batches = set()
    for index, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            continue
        if not isinstance(g, Variable) or tuple(g.shape[1:]) != tuple(out.shape) or g.ndim != out.ndim + 1:
            got = tuple(g.shape) if isinstance(g, Variable) else type(g).__name__
            raise ValueError(
                f"grad: with is_grads_batched=True, grad_outputs[{index}] must have a batch dimension "
                f"in front of the output's shape {tuple(out.shape)}, got {got}"
            )
        batches.add(g.shape[0])
    if len(batches) != 1:
        raise ValueError(f"grad: is_grads_batched=True needs grad_outputs of one batch size, got sizes {sorted(batches)}")
    (size,) = batches
    rows = [
        run_backward(
            outputs,
            [None if g is None else g[i] for g in grad_outputs],
            retain_graph or i < size - 1,  # every row but the last needs the graph again
            create_graph,
            inputs=inputs,
            capture=True,
            allow_unused=allow_unused,
        )
        for i in range(size)
    ]
    return tuple(None if column[0] is None else stack(list(column)) for column in zip(*rows))


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Sequence[Any] | None = None,
) -> None:
    """Accumulate gradients of `tensors` into the leaves' `.grad` (Tensor.backward for many roots)."""
    from numdiff.autograd.engine import run_backward

    tensors = _tensors("backward", "tensors", tensors)
    grad_tensors = [None] * len(tensors) if grad_tensors is None else _as_list(grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None if inputs is None else _as_list(inputs))


__all__ = [
    "forward_ad", "AnomalyError",
    "Variable",
    "Function",
    "GradcheckError",
    "SavedTensorFreedError",
    "SavedTensorModifiedError",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "inference_mode",
    "is_inference_mode_enabled",
    "is_grad_enabled",
    "no_grad",
    "set_detect_anomaly",
    "set_grad_enabled",
]


def __getattr__(name: str) -> Any:
    # numdiff.autograd.functional builds on numdiff.func, which needs the Tensor class; loading it
    # on first access keeps `numdiff.autograd.functional.jacobian(...)` working without an import.
    # numdiff.autograd.profiler (the legacy profiler API) and forward_ad (dual tensors, built on
    # numdiff.func's forward mode) load the same way.
    if name in ("forward_ad", "functional", "profiler"):
        import importlib

        return importlib.import_module(f"numdiff.autograd.{name}")
    raise AttributeError(f"module 'numdiff.autograd' has no attribute {name!r}")


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
