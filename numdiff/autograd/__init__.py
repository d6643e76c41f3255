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
    allow_unused: bool = False,
) -> tuple:
    """d(outputs)/d(inputs), returned as a tuple; no `.grad` is touched.

    >>> x = numdiff.tensor(3.0, requires_grad=True)
    >>> (dx,) = numdiff.autograd.grad(x**3, x, create_graph=True)
    >>> numdiff.autograd.grad(dx, x)   # second derivative 6x
    (tensor(18.),)
    """
    from numdiff.autograd.engine import run_backward

    outputs = _tensors("grad", "outputs", outputs)
    inputs = _tensors("grad", "inputs", inputs)
    grad_outputs = [None] * len(outputs) if grad_outputs is None else _as_list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    return run_backward(
        outputs, grad_outputs, retain_graph, create_graph, inputs=inputs, capture=True, allow_unused=allow_unused
    )


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
