"""Fused optimizer update kernels: one call per parameter per step, updating in place.

Each optimizer's per-element update is written once, as a plain function of scalars that returns
the new parameter value and the new state values (``_sgd_update``, ``_adam_update``, ...). It is
compiled twice: inlined into a CPU kernel here (``@njit``, ``prange`` over elements) and into a
CUDA kernel in numdiff.cuda.kernels.optim (``cuda.jit(device=True)``, one thread per element).
So every step reads each of param, grad and the state buffers once and writes param and state
once, with no array temporaries.

All arrays are flat (1-D), C-contiguous, of one float dtype and one length ``n``. A state buffer
an option does not use (SGD's momentum buffer without momentum, Adam's ``max_exp_avg_sq``
without amsgrad) must be passed as an empty array and is never touched. Hyperparameters arrive
as one tuple of floats and one of bools; arithmetic runs in float64 and is rounded once on store,
so float32 results differ from PyTorch's float32 arithmetic by rounding only.

The checked public entry points (:func:`sgd_step`, :func:`adam_step`, :func:`rmsprop_step`,
:func:`adagrad_step`) and the packing of the hyperparameter tuples are in
:mod:`numdiff.kernels.optim_steps` (and importable from here): they check dtypes, contiguity and
lengths in Python before anything compiled runs, and dispatch through numdiff.backend by array
type to the CPU launchers below (:func:`sgd_update`, ...) or their CUDA twins in
numdiff.cuda.kernels.optim. The launchers here assume checked arrays.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import get_num_threads, prange

from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels.optim_steps import (
    adagrad_hyper,
    adagrad_step,
    adam_hyper,
    adam_step,
    rmsprop_step,
    run_kernel,
    sgd_step,
)

__all__ = [
    "adagrad_hyper",
    "adagrad_step",
    "adagrad_update",
    "adam_hyper",
    "adam_step",
    "adam_update",
    "rmsprop_step",
    "rmsprop_update",
    "run_kernel",
    "sgd_step",
    "sgd_update",
]

PARALLEL_MIN_ELEMENTS = 1 << 16
"""Parameters with fewer elements are updated by one thread (thread start-up would dominate)."""


# --------------------------------------------------------------------------- element updates
# Plain functions of scalars, compiled below for both targets. Each takes one element of the
# parameter, gradient and state buffers plus the group's hyperparameters ``h`` (a tuple of
# floats) and flags ``f`` (a tuple of bools), and returns the new (param, *state) values.
# Tuple layouts are listed per optimizer in the checked launchers (numdiff.kernels.optim_steps).


def _sgd_update(p, g, buf, h, f):
    lr, momentum, dampening, weight_decay = h
    nesterov, maximize, first_step = f
    if maximize:
        g = -g
    if weight_decay != 0.0:
        g = g + weight_decay * p
    if momentum != 0.0:
        if first_step:
            buf = g
        else:
            buf = momentum * buf + (1.0 - dampening) * g
        if nesterov:
            g = g + momentum * buf
        else:
            g = buf
    return p - lr * g, buf


def _adam_update(p, g, m, v, vmax, h, f):
    # No float literals: with h in the parameter's dtype (float32 on the CPU, see run_kernel) the
    # whole update stays in that dtype, as PyTorch's does, with twice the SIMD lanes of float64.
    lr, beta1, beta2, eps, weight_decay, step_size, bc2_sqrt, one_minus_beta1, one_minus_beta2, decay = h
    decoupled, amsgrad, maximize = f
    if maximize:
        g = -g
    if weight_decay != 0.0:
        if decoupled:
            p = p * decay
        else:
            g = g + weight_decay * p
    m = m + one_minus_beta1 * (g - m)
    v = beta2 * v + one_minus_beta2 * g * g
    if amsgrad:
        vmax = max(vmax, v)
        denom = math.sqrt(vmax) / bc2_sqrt + eps
    else:
        denom = math.sqrt(v) / bc2_sqrt + eps
    return p - step_size * m / denom, m, v, vmax


def _rmsprop_update(p, g, sq, buf, gavg, h, f):
    lr, alpha, eps, weight_decay, momentum = h
    centered, maximize = f
    if maximize:
        g = -g
    if weight_decay != 0.0:
        g = g + weight_decay * p
    sq = alpha * sq + (1.0 - alpha) * g * g
    if centered:
        gavg = gavg + (1.0 - alpha) * (g - gavg)
        avg = math.sqrt(sq - gavg * gavg) + eps
    else:
        avg = math.sqrt(sq) + eps
    if momentum > 0.0:
        buf = momentum * buf + g / avg
        p = p - lr * buf
    else:
        p = p - lr * g / avg
    return p, sq, buf, gavg


def _adagrad_update(p, g, total, h, f):
    clr, eps, weight_decay = h
    (maximize,) = f
    if maximize:
        g = -g
    if weight_decay != 0.0:
        g = g + weight_decay * p
    total = total + g * g
    return p - clr * g / (math.sqrt(total) + eps), total


# --------------------------------------------------------------------------- CPU kernels
# Loop nests over flat arrays, compiled serial and parallel below. A buffer an option turns off
# is empty; its element is read as 0 and never written.

_sgd_cpu = njit(inline="always", cache=True)(_sgd_update)
_adam_cpu = njit(inline="always", cache=True)(_adam_update)
_rmsprop_cpu = njit(inline="always", cache=True)(_rmsprop_update)
_adagrad_cpu = njit(inline="always", cache=True)(_adagrad_update)


def sgd_loop(param, grad, buf, h, f):
    """for i in prange(n): param[i], buf[i] = update(param[i], grad[i], buf[i]).

    Shapes: all (n,), except ``buf`` (0,) when momentum == 0. The parallel build splits i over threads.
    """
    use_buf = buf.size != 0
    for i in prange(param.size):
        b = buf[i] if use_buf else 0.0
        p, b = _sgd_cpu(param[i], grad[i], b, h, f)
        param[i] = p
        if use_buf:
            buf[i] = b


def adam_loop(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, h, f):
    """for i in prange(n): param[i], exp_avg[i], exp_avg_sq[i], max_exp_avg_sq[i] = update(...).

    Shapes: all (n,), except ``max_exp_avg_sq`` (0,) without amsgrad. The parallel build splits i over threads.
    """
    use_max = max_exp_avg_sq.size != 0
    zero = h[0] - h[0]  # 0 in h's dtype (a 0.0 literal would make the float32 update float64)
    for i in prange(param.size):
        vm = max_exp_avg_sq[i] if use_max else zero
        p, m, v, vm = _adam_cpu(param[i], grad[i], exp_avg[i], exp_avg_sq[i], vm, h, f)
        param[i] = p
        exp_avg[i] = m
        exp_avg_sq[i] = v
        if use_max:
            max_exp_avg_sq[i] = vm


def rmsprop_loop(param, grad, square_avg, buf, grad_avg, h, f):
    """for i in prange(n): param[i], square_avg[i], buf[i], grad_avg[i] = update(...).

    Shapes: all (n,), except ``buf`` (0,) without momentum and ``grad_avg`` (0,) unless centered.
    The parallel build splits i over threads.
    """
    use_buf = buf.size != 0
    use_avg = grad_avg.size != 0
    for i in prange(param.size):
        b = buf[i] if use_buf else 0.0
        ga = grad_avg[i] if use_avg else 0.0
        p, sq, b, ga = _rmsprop_cpu(param[i], grad[i], square_avg[i], b, ga, h, f)
        param[i] = p
        square_avg[i] = sq
        if use_buf:
            buf[i] = b
        if use_avg:
            grad_avg[i] = ga


def adagrad_loop(param, grad, state_sum, h, f):
    """for i in prange(n): param[i], state_sum[i] = update(param[i], grad[i], state_sum[i]).

    Shapes: all (n,). The parallel build splits i over threads.
    """
    for i in prange(param.size):
        p, s = _adagrad_cpu(param[i], grad[i], state_sum[i], h, f)
        param[i] = p
        state_sum[i] = s


# error_model="numpy": a division is then a plain instruction (Numba's default checks each divisor
# for zero, a branch that stops LLVM vectorising the loop: Adam over 670k float32 parameters took
# 2.6 ms with it, 1.35 without), and a zero divisor (eps=0) gives inf or NaN, as in PyTorch.
CPU_KERNELS = {
    name: serial_and_parallel(loop, error_model="numpy")
    for name, loop in [
        ("sgd", sgd_loop),
        ("adam", adam_loop),
        ("rmsprop", rmsprop_loop),
        ("adagrad", adagrad_loop),
    ]
}
"""Optimizer name -> (serial kernel, parallel kernel)."""


# --------------------------------------------------------------------------- CPU launchers


def _cpu_build(name: str, param: np.ndarray) -> Any:
    serial, parallel = CPU_KERNELS[name]
    return parallel if param.size >= PARALLEL_MIN_ELEMENTS and get_num_threads() > 1 else serial


def sgd_update(param: Any, grad: Any, momentum_buffer: Any, h: tuple, f: tuple) -> None:
    """SGD step in place on host arrays; h = (lr, momentum, dampening, weight_decay),
    f = (nesterov, maximize, first_step). ``momentum_buffer`` is empty without momentum."""
    _cpu_build("sgd", param)(param, grad, momentum_buffer, h, f)


def adam_update(
    param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, max_exp_avg_sq: Any, h: tuple, f: tuple
) -> None:
    """Adam/AdamW step in place on host arrays; tuples as in :func:`adam_step`."""
    _cpu_build("adam", param)(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, h, f)


def rmsprop_update(
    param: Any, grad: Any, square_avg: Any, momentum_buffer: Any, grad_avg: Any, h: tuple, f: tuple
) -> None:
    """RMSprop step in place on host arrays; tuples as in :func:`rmsprop_step`."""
    _cpu_build("rmsprop", param)(param, grad, square_avg, momentum_buffer, grad_avg, h, f)


def adagrad_update(param: Any, grad: Any, state_sum: Any, h: tuple, f: tuple) -> None:
    """Adagrad step in place on host arrays; tuples as in :func:`adagrad_step`."""
    _cpu_build("adagrad", param)(param, grad, state_sum, h, f)
