"""Functional forms of the normalisation layers: batch_norm, instance_norm, group_norm, layer_norm.

batch_norm in training, instance_norm with the input's statistics, group_norm and layer_norm run the fused
``grouped_norm`` op (numdiff.ops.norm: one kernel per direction); the rest are compositions of
differentiable ops. Running statistics are in-place updates made under no_grad, as in PyTorch;
BatchNorm's, in eager mode where the write records nothing, go straight into the buffers' storage
by one moments kernel and one update launcher (``_write_running_stats``), the bits of the ops.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from numdiff import _dtype, _inplace
from numdiff._dtype_info import finfo
from numdiff._ground.args import is_int
from numdiff._lazy import lazy_module
from numdiff.autograd.grad_mode import no_grad
from numdiff.backend import is_host
from numdiff.nn._functional_layers import _check_tensor
from numdiff.ops.norm import grouped_moments, grouped_norm, running_stat_update
from numdiff.tensor import Tensor

_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_REDUCED = (_dtype.float16, _dtype.bfloat16)
_norm_kernels = lazy_module("numdiff.kernels.norm")
_running_kernels = lazy_module("numdiff.kernels.norm_running")


def _channel_shape(input: Tensor) -> tuple[int, ...]:
    return (1, input.shape[1]) + (1,) * (input.ndim - 2)


def _check_channel_vectors(op: str, input: Tensor, **vectors: Tensor | None) -> None:
    """Each given per-channel vector (running statistics, weight, bias) has one entry per channel."""
    channels = input.shape[1]
    for name, t in vectors.items():
        if t is not None and tuple(t.shape) != (channels,):
            raise ValueError(f"{op}: {name} must have shape ({channels},) for input {tuple(input.shape)}, got {tuple(t.shape)}")


def _in_input_dtype(input: Tensor, out: Tensor) -> Tensor:
    """PyTorch's norms take a float16 or bfloat16 input with float32 weight, bias or running
    statistics (autocast's usual mix: a lowered Linear's output into a float32 LayerNorm),
    compute in float32 and return the input's dtype; numdiff's ops promote, so the result is
    cast back here."""
    return out.to(input.dtype) if input.dtype in _REDUCED and out.dtype is not input.dtype else out


def _scale_and_shift(out: Tensor, weight: Tensor | None, bias: Tensor | None, shape: tuple[int, ...]) -> Tensor:
    """``out * weight + bias``, the per-channel vectors reshaped to broadcast as `shape`."""
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _write_running_stats(
    input: Tensor, view: tuple, running_mean: Tensor | None, running_var: Tensor | None, momentum: float, unbiased: float
) -> bool:
    """BatchNorm's running-estimate updates written straight into the buffers' storage, where that
    write records nothing (numdiff._inplace.records_nothing: no transform or compile level, host
    arrays, nothing requiring grad) and every array is of input's float32 or float64 dtype: the
    grouped_moments and running_stat kernels run on the arrays, the same bits as those ops'
    results, without their five op calls and in-place bookkeeping (BatchNorm2d training forward
    8x16x8x8 with the batch count written likewise, one thread: 69 -> 44 us, torch 23). Returns
    False, having written nothing, otherwise."""
    data = input._data
    if data.dtype not in _KERNEL_DTYPES or not is_host(data):
        return False
    buffers = (running_mean, running_var)
    for t in buffers:
        if t is not None and (t._data.dtype != data.dtype or not _inplace.records_nothing(t, None)):
            return False
    moments = np.empty((2, 1, view[2]), dtype=data.dtype)
    _norm_kernels.group_norm_moments(np.ascontiguousarray(data).reshape(view), moments)
    arrays = [None if t is None else t._data for t in buffers]
    for t, new in zip(buffers, _running_kernels.running_stats_update(moments, *arrays, momentum, unbiased)):
        if t is not None:
            _inplace.write_at(t, "running_stat_", Ellipsis, new)
    return True


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel (dim 1) of an (N, C, ...) input by its batch or running statistics.

    In training the batch mean and biased variance normalise, and the running estimates move by
    `momentum` towards the batch mean and the unbiased variance.
    """
    _check_tensor("batch_norm", "input", input)
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected input of shape (N, C, ...), got {tuple(input.shape)}")
    channels = input.shape[1]
    _check_channel_vectors("batch_norm", input, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias)
    shape = _channel_shape(input)
    if training:
        count = input.numel() // channels if channels else 0
        if count <= 1:
            raise ValueError(
                f"batch_norm: expected more than 1 value per channel when training, got input of shape {tuple(input.shape)}"
            )
        view = (1, input.shape[0], channels, 1, count // input.shape[0])
        unbiased = count / (count - 1)
        if (running_mean is not None or running_var is not None) and not _write_running_stats(
            input, view, running_mean, running_var, momentum, unbiased
        ):
            with no_grad():
                moments = grouped_moments(input, view)
                if running_mean is not None:
                    _inplace.apply_inplace(running_mean, "running_stat_", lambda old: running_stat_update(old, moments, 0, momentum))
                if running_var is not None:
                    _inplace.apply_inplace(
                        running_var, "running_stat_", lambda old: running_stat_update(old, moments, 1, momentum, unbiased)
                    )
        return _in_input_dtype(input, grouped_norm(input, view, weight, bias, eps))
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var must be given when training=False")
        mean, var = running_mean, running_var
    out = _scale_and_shift((input - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt(), weight, bias, shape)
    return _in_input_dtype(input, out)


def group_norm(
    input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
) -> Tensor:
    """Normalise each sample's channels in `num_groups` groups (biased variance over the group's
    channels and positions), then scale and shift per channel."""
    _check_tensor("group_norm", "input", input)
    if input.ndim < 2:
        raise ValueError(f"group_norm: expected input of shape (N, C, *), got {tuple(input.shape)}")
    n, channels = input.shape[0], input.shape[1]
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups <= 0:
        raise ValueError(f"group_norm: num_groups must be a positive int, got {num_groups!r}")
    if channels % num_groups:
        raise ValueError(
            f"group_norm: expected the number of channels ({channels}) to be divisible by num_groups ({num_groups}), "
            f"input of shape {tuple(input.shape)}"
        )
    _check_channel_vectors("group_norm", input, weight=weight, bias=bias)
    if n * channels // num_groups * math.prod(input.shape[2:]) == 1:
        # PyTorch's own test (its _verify_batch_size over (N * C // G, G, *positions)): it refuses one
        # sample whose groups each hold one value, and accepts a batch of them.
        raise ValueError(f"group_norm: expected more than 1 value per channel when training, got input of shape {tuple(input.shape)}")
    per_group = channels // num_groups
    view = (n, 1, num_groups, per_group, math.prod(input.shape[2:]))
    return _in_input_dtype(input, grouped_norm(input, view, weight, bias, eps))


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each (sample, channel) of an (N, C, ...) input over its positions.

    With `use_input_stats` the instance's own mean and biased variance normalise, and running
    estimates, when given, move by `momentum` towards the batch's average instance mean and
    unbiased variance; otherwise the running estimates normalise.
    """
    _check_tensor("instance_norm", "input", input)
    if input.ndim < 2:
        raise ValueError(f"instance_norm: expected input of shape (N, C, *), got {tuple(input.shape)}")
    channels = input.shape[1]
    _check_channel_vectors("instance_norm", input, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias)
    shape = _channel_shape(input)
    if use_input_stats:
        count = int(np.prod(input.shape[2:]))
        if count <= 1:
            raise ValueError(
                f"instance_norm: expected more than 1 spatial element when training, got input of shape {tuple(input.shape)}"
            )
        view = (input.shape[0], 1, channels, 1, count)
        if running_mean is not None or running_var is not None:
            with no_grad():
                mean, var = grouped_moments(input, view).mean(1)
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
                if running_var is not None:
                    unbiased = var * (count / (count - 1))
                    running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
        return _in_input_dtype(input, grouped_norm(input, view, weight, bias, eps))
    else:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: running_mean and running_var must be given when use_input_stats=False")
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    return _in_input_dtype(input, _scale_and_shift((input - mean) * (var + eps).rsqrt(), weight, bias, shape))


def layer_norm(
    input: Tensor,
    normalized_shape: Sequence[int] | int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the trailing `normalized_shape` dims (biased variance), then scale and shift."""
    dims = _trailing_dims("layer_norm", input, normalized_shape, weight=weight, bias=bias)
    width = math.prod(input.shape[dims[0] :])
    rows = math.prod(input.shape[: dims[0]])
    return _in_input_dtype(input, grouped_norm(input, (rows, 1, 1, width, 1), weight, bias, eps))


def rms_norm(
    input: Tensor,
    normalized_shape: Sequence[int] | int,
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """``input / sqrt(mean(input**2) + eps) * weight``, the mean over the trailing
    `normalized_shape` dims, in the input's dtype. As in PyTorch, a float16 or bfloat16 input is
    computed in float32, and eps None is the machine epsilon of the dtype computed in (float32's
    for those, not their own: bfloat16's 2**-7 would swamp small activations).

    >>> rms_norm(numdiff.tensor([[3.0, 4.0]]), 2)
    tensor([[0.8485, 1.1314]])
    """
    dims = _trailing_dims("rms_norm", input, normalized_shape, weight=weight)
    computed = input.to(_dtype.float32) if input.dtype in _REDUCED else input
    if eps is None:
        eps = finfo(computed.dtype).eps
    out = computed * ((computed * computed).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    return out if out.dtype is input.dtype else out.to(input.dtype)


def _trailing_dims(op: str, input: Tensor, normalized_shape: Sequence[int] | int, **params: Tensor | None) -> tuple:
    """The dims `op` normalises over: the trailing ones, which must have `normalized_shape`, as must
    each of `params` that is not None."""
    _check_tensor(op, "input", input)
    if is_int(normalized_shape):
        normalized_shape = (normalized_shape,)
    elif isinstance(normalized_shape, (str, bytes)) or not hasattr(normalized_shape, "__iter__"):
        raise TypeError(f"{op}: normalized_shape must be an int or a sequence of ints, got {normalized_shape!r}")
    normalized_shape = tuple(normalized_shape)
    if not all(is_int(n) for n in normalized_shape):
        raise TypeError(f"{op}: normalized_shape must be an int or a sequence of ints, got {normalized_shape!r}")
    normalized_shape = tuple(int(n) for n in normalized_shape)
    count = len(normalized_shape)
    if count == 0 or tuple(input.shape[input.ndim - count :]) != normalized_shape or input.ndim < count:
        raise ValueError(
            f"{op}: given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"(*, {', '.join(map(str, normalized_shape))}), but got input of shape {tuple(input.shape)}"
        )
    for name, t in params.items():
        if t is not None and tuple(t.shape) != normalized_shape:
            raise ValueError(f"{op}: {name} must have shape {normalized_shape}, got {tuple(t.shape)}")
    return tuple(range(input.ndim - count, input.ndim))


__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm", "rms_norm"]
