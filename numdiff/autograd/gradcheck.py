"""Check analytic gradients against central differences, in float64."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numdiff.tensor import Tensor


class GradcheckError(RuntimeError):
    """Analytic and numerical derivatives disagree."""


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable(inputs: Sequence[Any]) -> list[int]:
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _outputs(fn: Callable, inputs: Sequence[Any]) -> list:
    from numdiff.tensor import Tensor

    return [o for o in _as_tuple(fn(*inputs)) if isinstance(o, Tensor) and o.is_floating_point()]


def _numerical_jacobian(fn, inputs, index, eps):
    """d(all outputs, flattened)/d(inputs[index], flattened) by central differences."""
    x = inputs[index]
    data = x._data
    if data.dtype != np.float64:
        raise GradcheckError(f"gradcheck: input {index} has dtype {x.dtype!r}; use float64 inputs")
    flat = data.reshape(-1)
    columns = []
    # fn runs with grad mode on: for gradgradcheck, fn itself differentiates.
    for k in range(flat.size):
        original = flat[k]
        flat[k] = original + eps
        plus = np.concatenate([o._data.reshape(-1) for o in _outputs(fn, inputs)])
        flat[k] = original - eps
        minus = np.concatenate([o._data.reshape(-1) for o in _outputs(fn, inputs)])
        flat[k] = original
        columns.append((plus - minus) / (2 * eps))
    return np.stack(columns, axis=1) if columns else np.zeros((0, 0))


def _analytic_jacobian(fn, inputs, index):
    from numdiff.autograd import grad as autograd_grad
    from numdiff.creation import zeros_like

    outputs = _outputs(fn, inputs)
    rows = []
    for out_index, out in enumerate(outputs):
        for k in range(out.numel()):
            seeds = [zeros_like(o) for o in outputs]
            seeds[out_index]._data.reshape(-1)[k] = 1.0
            (g,) = autograd_grad(outputs, [inputs[index]], seeds, retain_graph=True, allow_unused=True)
            size = inputs[index].numel()
            rows.append(np.zeros(size) if g is None else g._data.reshape(-1).astype(np.float64))
    return np.stack(rows, axis=0) if rows else np.zeros((0, inputs[index].numel()))


def gradcheck(
    fn: Callable,
    inputs: Any,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """True if every analytic derivative of `fn` matches central differences.

    Inputs that require grad must be float64. On failure, the error names the input, the worst
    element, and its analytic and numerical values.

    >>> x = numdiff.randn(3, dtype=numdiff.float64, requires_grad=True)
    >>> gradcheck(lambda t: (t * t).sum(), (x,))
    True
    """
    inputs = _as_tuple(inputs)
    for index in _differentiable(inputs):
        numeric = _numerical_jacobian(fn, inputs, index, eps)
        analytic = _analytic_jacobian(fn, inputs, index)
        if numeric.shape != analytic.shape:
            raise GradcheckError(f"gradcheck: Jacobian shapes differ for input {index}: analytic {analytic.shape}, numerical {numeric.shape}")
        error = np.abs(analytic - numeric) - (atol + rtol * np.abs(numeric))
        if error.size and (error.max() > 0 or not np.all(np.isfinite(analytic) == np.isfinite(numeric))):
            worst = np.unravel_index(np.nanargmax(np.where(np.isnan(error), np.inf, error)), error.shape)
            message = (
                f"gradcheck: Jacobian mismatch for input {index} (shape {tuple(inputs[index].shape)}) at "
                f"output element {worst[0]}, input element {worst[1]}: analytic {analytic[worst]!r}, "
                f"numerical {numeric[worst]!r} (atol={atol}, rtol={rtol})"
            )
            if raise_exception:
                raise GradcheckError(message)
            return False
    return True


def gradgradcheck(
    fn: Callable,
    inputs: Any,
    grad_outputs: Any = None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """True if the second derivatives of `fn` (its backward, differentiated) match central differences."""
    from numdiff.autograd import grad as autograd_grad
    from numdiff.creation import randn

    inputs = _as_tuple(inputs)
    wrt = _differentiable(inputs)
    if grad_outputs is None:
        grad_outputs = tuple(
            randn(*o.shape, dtype=o.dtype, requires_grad=True) for o in _outputs(fn, inputs)
        )
    grad_outputs = _as_tuple(grad_outputs)
    count = len(inputs)

    def first_derivatives(*args):
        xs, vs = args[:count], args[count:]
        outputs = _outputs(fn, xs)
        grads = autograd_grad(
            outputs, [xs[i] for i in wrt], list(vs), create_graph=True, allow_unused=True
        )
        return tuple(g for g in grads if g is not None and g.requires_grad)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps, atol, rtol, raise_exception)
