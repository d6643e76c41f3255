"""Reverse-mode autodiff: the tape engine, the Function contract, grad modes and checks."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
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
    """A tensor (or None) as a one-item list; any other iterable as its items, as PyTorch reads them:
    MAML code passes ``model.parameters()`` (a generator) or a dict's ``.values()``."""
    if isinstance(x, (tuple, list)):
        return list(x)
    if x is None or isinstance(x, Variable) or not isinstance(x, Iterable):
        return [x]
    return list(x)


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
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple | dict:
    """d(outputs)/d(inputs), returned as a tuple (a dict when `inputs` is a dict of tensors, as
    torch 2's); no `.grad` is touched. PyTorch's keywords: `only_inputs` is deprecated and ignored
    (False warns, as PyTorch does); `is_grads_batched` takes each grad_output with a leading batch
    dimension and returns the gradients stacked along it; `materialize_grads` gives zeros instead of
    None for inputs the outputs do not depend on (`allow_unused` then defaults to True).

    >>> x = numdiff.tensor(3.0, requires_grad=True)
    >>> (dx,) = numdiff.autograd.grad(x**3, x, create_graph=True)
    >>> numdiff.autograd.grad(dx, x)   # second derivative 6x
    (tensor(18.),)
    """
    from numdiff.autograd.engine import run_backward

    if materialize_grads and allow_unused is False:
        raise ValueError(
            "grad: materialize_grads=True fills unused inputs' gradients with zeros, so allow_unused must be "
            "True or not passed, but got allow_unused=False"
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    if not only_inputs:
        # PyTorch's own warning: the argument has done nothing since it was deprecated.
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
            "gradient for other parts of the graph, please use numdiff.autograd.backward.",
            FutureWarning,
            stacklevel=2,
        )
    keys = list(inputs) if type(inputs) is dict else None
    outputs = _tensors("grad", "outputs", outputs)
    inputs = _tensors("grad", "inputs", list(inputs.values()) if keys is not None else inputs)
    if not inputs:
        raise RuntimeError("grad: the inputs argument cannot be empty; pass the tensors to differentiate with respect to")
    grad_outputs = [None] * len(outputs) if grad_outputs is None else _as_list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        result = _batched_grad(run_backward, outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)
    else:
        result = run_backward(
            outputs, grad_outputs, retain_graph, create_graph, inputs=inputs, capture=True, allow_unused=allow_unused
        )
    if materialize_grads:
        result = tuple(
            g if g is not None else t.new_zeros(t.shape).requires_grad_(create_graph) for g, t in zip(result, inputs)
        )
    return dict(zip(keys, result)) if keys is not None else result


def _batched_grad(run_backward: Any, outputs: list, inputs: list, grad_outputs: list, retain_graph: bool,
                  create_graph: bool, allow_unused: bool) -> tuple:
    """grad with is_grads_batched: one backward per entry of the grad_outputs' leading dimension
    (the graph kept until the last), each input's gradients stacked along a new first dimension."""
    from numdiff.ops.joining import stack

    sizes = set()
    for index, (output, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(g, Variable) or g.ndim == 0 or g.shape[0] == 0 or tuple(g.shape[1:]) != tuple(output.shape):
            shape = tuple(g.shape) if isinstance(g, Variable) else type(g).__name__
            raise RuntimeError(
                f"grad: with is_grads_batched=True, grad_outputs[{index}] must be a tensor of shape (batch, "
                f"*{tuple(output.shape)}) (output {index}'s shape behind a batch of at least 1), got {shape}"
            )
        sizes.add(g.shape[0])
    if len(sizes) != 1:
        raise RuntimeError(f"grad: with is_grads_batched=True, every grad_output needs one batch size, got {sorted(sizes)}")
    (count,) = sizes
    rows = []
    for b in range(count):
        keep = retain_graph or b < count - 1  # the later rows walk the same graph
        rows.append(run_backward(outputs, [g[b] for g in grad_outputs], keep, create_graph, inputs=inputs,
                                 capture=True, allow_unused=allow_unused))
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
