"""Fused optimizer update kernels on CUDA: one thread per element, updating in place.

The per-element updates are numdiff.kernels.optim's plain scalar functions (``_sgd_update``,
``_adam_update``, ...), compiled here with ``cuda.jit(device=True)``, so the CPU and the GPU run
the same arithmetic. The launchers take the CPU launchers' arguments (flat, contiguous CudaArrays
of one float dtype, then the hyperparameter tuples ``h`` and ``f``); the public ``*_step``
functions in numdiff.kernels.optim check those arrays before either device's launcher runs.
Grid: ceil(n / THREADS_PER_BLOCK) blocks of THREADS_PER_BLOCK threads.
"""

from __future__ import annotations

from typing import Any

from numba import cuda

from numdiff.kernels.optim import _adagrad_update, _adam_update, _rmsprop_update, _sgd_update

__all__ = ["adagrad_update", "adam_update", "rmsprop_update", "sgd_update"]

THREADS_PER_BLOCK = 256

_sgd_device = cuda.jit(device=True)(_sgd_update)
_adam_device = cuda.jit(device=True)(_adam_update)
_rmsprop_device = cuda.jit(device=True)(_rmsprop_update)
_adagrad_device = cuda.jit(device=True)(_adagrad_update)


@cuda.jit
def _sgd_kernel(param, grad, buf, h, f):
    i = cuda.grid(1)
    if i < param.size:
        use_buf = buf.size != 0
        b = buf[i] if use_buf else 0.0
        p, b = _sgd_device(param[i], grad[i], b, h, f)
        param[i] = p
        if use_buf:
            buf[i] = b


@cuda.jit
def _adam_kernel(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, h, f):
    i = cuda.grid(1)
    if i < param.size:
        use_max = max_exp_avg_sq.size != 0
        zero = h[0] - h[0]  # 0 in h's dtype, as in the CPU loop (a 0.0 literal would widen float32)
        vm = max_exp_avg_sq[i] if use_max else zero
        p, m, v, vm = _adam_device(param[i], grad[i], exp_avg[i], exp_avg_sq[i], vm, h, f)
        param[i] = p
        exp_avg[i] = m
        exp_avg_sq[i] = v
        if use_max:
            max_exp_avg_sq[i] = vm


@cuda.jit
def _rmsprop_kernel(param, grad, square_avg, buf, grad_avg, h, f):
    i = cuda.grid(1)
    if i < param.size:
        use_buf = buf.size != 0
        use_avg = grad_avg.size != 0
        b = buf[i] if use_buf else 0.0
        ga = grad_avg[i] if use_avg else 0.0
        p, sq, b, ga = _rmsprop_device(param[i], grad[i], square_avg[i], b, ga, h, f)
        param[i] = p
        square_avg[i] = sq
        if use_buf:
            buf[i] = b
        if use_avg:
            grad_avg[i] = ga


@cuda.jit
def _adagrad_kernel(param, grad, state_sum, h, f):
    i = cuda.grid(1)
    if i < param.size:
        p, s = _adagrad_device(param[i], grad[i], state_sum[i], h, f)
        param[i] = p
        state_sum[i] = s


def _buffer(array: Any) -> Any:
    """The numba device array under a flat contiguous CudaArray (other device arrays pass through)."""
    if hasattr(array, "_buffer"):
        return array._buffer[array._offset : array._offset + array.size]
    return array


def _launch(kernel: Any, arrays: tuple[Any, ...], h: tuple, f: tuple) -> None:
    n = arrays[0].size
    if n == 0:
        return
    index = getattr(getattr(arrays[0], "device", None), "index", None) or 0
    blocks = (n + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    with cuda.gpus[index]:
        kernel[blocks, THREADS_PER_BLOCK](*(_buffer(a) for a in arrays), h, f)


def sgd_update(param: Any, grad: Any, momentum_buffer: Any, h: tuple, f: tuple) -> None:
    """SGD step in place; h = (lr, momentum, dampening, weight_decay), f = (nesterov, maximize,
    first_step). ``momentum_buffer`` is empty without momentum."""
    _launch(_sgd_kernel, (param, grad, momentum_buffer), h, f)


def adam_update(
    param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, max_exp_avg_sq: Any, h: tuple, f: tuple
) -> None:
    """Adam/AdamW step in place; tuples as in numdiff.kernels.optim.adam_step."""
    _launch(_adam_kernel, (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq), h, f)


def rmsprop_update(
    param: Any, grad: Any, square_avg: Any, momentum_buffer: Any, grad_avg: Any, h: tuple, f: tuple
) -> None:
    """RMSprop step in place; tuples as in numdiff.kernels.optim.rmsprop_step."""
    _launch(_rmsprop_kernel, (param, grad, square_avg, momentum_buffer, grad_avg), h, f)


def adagrad_update(param: Any, grad: Any, state_sum: Any, h: tuple, f: tuple) -> None:
    """Adagrad step in place; tuples as in numdiff.kernels.optim.adagrad_step."""
    _launch(_adagrad_kernel, (param, grad, state_sum), h, f)
