"""The checked entry points of the fused optimizer updates: one call per parameter per step.

:func:`sgd_step`, :func:`adam_step`, :func:`rmsprop_step` and :func:`adagrad_step` take each
optimizer's hyperparameters by name, check dtypes, contiguity and lengths in Python before anything
compiled runs (a bad length in a Numba loop would write out of bounds), pack the hyperparameters
into the kernels' tuples (``h`` of floats, with Adam's bias corrections and Adagrad's decayed lr
worked out here by :func:`adam_hyper` and :func:`adagrad_hyper`; ``f`` of bools), and hand them to
:func:`run_kernel`, which dispatches through numdiff.backend by array type: the CPU launchers in
:mod:`numdiff.kernels.optim` or their CUDA twins in numdiff.cuda.kernels.optim.

Arrays are flat (1-D), C-contiguous, of one float dtype and one length; a state buffer an option
does not use is passed empty (see :mod:`numdiff.kernels.optim` for the update each kernel runs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.backend import backend_for
from numdiff.kernels._checks import FLOAT_DTYPES

__all__ = [
    "adagrad_hyper",
    "adagrad_step",
    "adam_hyper",
    "adam_step",
    "rmsprop_step",
    "run_kernel",
    "sgd_step",
]


def _check(op: str, param: Any, required: dict[str, Any], optional: dict[str, tuple[Any, bool]]) -> None:
    """Check that every array is flat, contiguous, of param's float dtype and length.

    `optional` maps a name to (array, used): a used buffer has param's length, an unused one is empty.
    """
    array_type = type(param)
    dtype = param.dtype
    if dtype not in FLOAT_DTYPES:
        raise TypeError(f"{op}: param must be float32 or float64, got {dtype}")
    n = param.size
    arrays = {"param": (param, True), **{k: (v, True) for k, v in required.items()}, **optional}
    for name, (arr, used) in arrays.items():
        if type(arr) is not array_type:
            raise TypeError(
                f"{op}: {name} is a {type(arr).__name__} but param is a {type(param).__name__}; "
                "all arrays must be on one device"
            )
        if arr.dtype != dtype:
            raise TypeError(f"{op}: {name} has dtype {arr.dtype} but param has dtype {dtype}")
        if arr.ndim != 1:
            raise ValueError(f"{op}: {name} must be a flat (1-D) array, got shape {arr.shape}")
        if not arr.flags.c_contiguous:
            raise ValueError(f"{op}: {name} must be contiguous, got strides {arr.strides}")
        expected = n if used else 0
        if arr.size != expected:
            why = f"param has {n}" if used else "the options in use need no such buffer: pass an empty array"
            raise ValueError(f"{op}: {name} has {arr.size} elements but {why}")


def run_kernel(name: str, arrays: tuple[Any, ...], h: tuple[float, ...], f: tuple[bool, ...]) -> None:
    """Run optimizer `name`'s kernel on checked arrays through the array's backend: on the CPU
    serial or threaded by size, on CUDA one launch."""
    param = arrays[0]
    if name == "adam" and param.dtype == np.float32:
        # The update in float32 (see _adam_update), as PyTorch's: over the 670k parameters of an
        # MLP, 0.7 ms against 1.55 in float64 (one thread).
        h = tuple(np.float32(x) for x in h)
    else:
        h = tuple(float(x) for x in h)
    f = tuple(bool(x) for x in f)
    getattr(backend_for(arrays[0]), name + "_update")(*arrays, h, f)


def sgd_step(
    param: Any, grad: Any, momentum_buffer: Any, *, lr: float, momentum: float, dampening: float,
    weight_decay: float, nesterov: bool, maximize: bool, first_step: bool,
) -> None:  # fmt: skip
    """SGD update of `param` (and `momentum_buffer` when momentum != 0), in place.

    ``first_step`` copies the (decayed) gradient into the buffer instead of averaging, as PyTorch
    does when it creates the buffer. Kernel tuples: h = (lr, momentum, dampening, weight_decay),
    f = (nesterov, maximize, first_step).

    >>> p, g = np.ones(3), np.full(3, 0.5)
    >>> sgd_step(p, g, np.empty(0), lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0,
    ...          nesterov=False, maximize=False, first_step=True)
    >>> p
    array([0.95, 0.95, 0.95])
    """
    _check("sgd_step", param, {"grad": grad}, {"momentum_buffer": (momentum_buffer, momentum != 0.0)})
    h = (lr, momentum, dampening, weight_decay)
    run_kernel("sgd", (param, grad, momentum_buffer), h, (nesterov, maximize, first_step))


def adam_step(
    param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, max_exp_avg_sq: Any, *, step: float, lr: float,
    beta1: float, beta2: float, eps: float, weight_decay: float, decoupled_weight_decay: bool,
    amsgrad: bool, maximize: bool,
) -> None:  # fmt: skip
    """Adam (or AdamW, with ``decoupled_weight_decay``) update for step number `step` (1-based).

    Kernel tuples: h = (lr, beta1, beta2, eps, weight_decay, lr / (1 - beta1**step),
    sqrt(1 - beta2**step), 1 - beta1, 1 - beta2, 1 - lr * weight_decay) (`adam_hyper`),
    f = (decoupled_weight_decay, amsgrad, maximize).

    >>> p, g, m, v = np.ones(2), np.ones(2), np.zeros(2), np.zeros(2)
    >>> adam_step(p, g, m, v, np.empty(0), step=1, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8,
    ...           weight_decay=0.0, decoupled_weight_decay=False, amsgrad=False, maximize=False)
    >>> p.round(6)
    array([0.9, 0.9])
    """
    _check(
        "adam_step", param, {"grad": grad, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq},
        {"max_exp_avg_sq": (max_exp_avg_sq, amsgrad)},
    )  # fmt: skip
    h = adam_hyper(step, lr, beta1, beta2, eps, weight_decay)
    f = (decoupled_weight_decay, amsgrad, maximize)
    run_kernel("adam", (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq), h, f)


def rmsprop_step(
    param: Any, grad: Any, square_avg: Any, momentum_buffer: Any, grad_avg: Any, *, lr: float, alpha: float,
    eps: float, weight_decay: float, momentum: float, centered: bool, maximize: bool,
) -> None:  # fmt: skip
    """RMSprop update of `param` and its running averages, in place.

    Kernel tuples: h = (lr, alpha, eps, weight_decay, momentum), f = (centered, maximize).

    >>> p, g, sq = np.ones(2), np.ones(2), np.zeros(2)
    >>> rmsprop_step(p, g, sq, np.empty(0), np.empty(0), lr=0.01, alpha=0.99, eps=1e-8,
    ...              weight_decay=0.0, momentum=0.0, centered=False, maximize=False)
    >>> p.round(4)
    array([0.9, 0.9])
    """
    optional = {"momentum_buffer": (momentum_buffer, momentum > 0.0), "grad_avg": (grad_avg, centered)}
    _check("rmsprop_step", param, {"grad": grad, "square_avg": square_avg}, optional)
    h = (lr, alpha, eps, weight_decay, momentum)
    run_kernel("rmsprop", (param, grad, square_avg, momentum_buffer, grad_avg), h, (centered, maximize))


def adagrad_step(
    param: Any, grad: Any, state_sum: Any, *, step: float, lr: float, lr_decay: float, eps: float,
    weight_decay: float, maximize: bool,
) -> None:  # fmt: skip
    """Adagrad update for step number `step` (1-based): lr decays as lr / (1 + (step-1) * lr_decay).

    Kernel tuples: h = (decayed lr, eps, weight_decay), f = (maximize,).

    >>> p, g, s = np.ones(2), np.ones(2), np.zeros(2)
    >>> adagrad_step(p, g, s, step=1, lr=0.1, lr_decay=0.0, eps=1e-10, weight_decay=0.0, maximize=False)
    >>> p.round(6)
    array([0.9, 0.9])
    """
    _check("adagrad_step", param, {"grad": grad, "state_sum": state_sum}, {})
    if step < 1:
        raise ValueError(f"adagrad_step: step counts from 1, got {step}")
    run_kernel("adagrad", (param, grad, state_sum), adagrad_hyper(step, lr, lr_decay, eps, weight_decay), (maximize,))


def adam_hyper(
    step: float, lr: float, beta1: float, beta2: float, eps: float, weight_decay: float
) -> tuple[float, ...]:
    """Adam's kernel tuple h for step number `step` (1-based), bias corrections included.

    >>> adam_hyper(1, 0.1, 0.5, 0.75, 1e-8, 0.0)
    (0.1, 0.5, 0.75, 1e-08, 0.0, 0.2, 0.5, 0.5, 0.25, 1.0)
    """
    if step < 1:
        raise ValueError(f"adam_step: step counts from 1, got {step}")
    return (
        lr, beta1, beta2, eps, weight_decay, lr / (1.0 - beta1**step), (1.0 - beta2**step) ** 0.5,
        1.0 - beta1, 1.0 - beta2, 1.0 - lr * weight_decay,
    )  # fmt: skip


def adagrad_hyper(step: float, lr: float, lr_decay: float, eps: float, weight_decay: float) -> tuple[float, ...]:
    """Adagrad's kernel tuple h for step number `step` (1-based): the decayed lr, eps, weight_decay.

    >>> adagrad_hyper(3, 0.1, 0.5, 1e-10, 0.0)
    (0.05, 1e-10, 0.0)
    """
    if step < 1:
        raise ValueError(f"adagrad_step: step counts from 1, got {step}")
    return (lr / (1.0 + (step - 1) * lr_decay), eps, weight_decay)
