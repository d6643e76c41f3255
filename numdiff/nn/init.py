"""Weight initialisation, in place and under no_grad, drawing from numdiff's default generator.

Formulas are PyTorch's, so ``numdiff.manual_seed(s)`` makes them reproducible (the streams differ
from PyTorch's, the distributions do not).

>>> w = numdiff.empty(4, 3)
>>> numdiff.nn.init.kaiming_uniform_(w, a=math.sqrt(5))   # Linear's default weight init
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from numdiff._random import Generator
from numdiff.autograd.grad_mode import no_grad
from numdiff.tensor import Tensor

_LINEAR_GAINS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended scale for a nonlinearity: relu sqrt(2), tanh 5/3, leaky_relu sqrt(2/(1+a^2)).

    >>> calculate_gain("relu")
    1.4142135623730951
    """
    if nonlinearity in _LINEAR_GAINS:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _check(op: str, tensor: Any) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"init.{op}: expected a Tensor, got {type(tensor).__name__}")
    if not tensor.is_floating_point():
        raise TypeError(f"init.{op}: expected a floating point tensor, got dtype {tensor.dtype!r}")
    return tensor


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out): dim 1 and dim 0 sizes times the receptive field (product of dims 2..)."""
    if tensor.ndim < 2:
        raise ValueError(
            f"Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
            f"(got shape {tuple(tensor.shape)})"
        )
    receptive_field = 1
    for size in tensor.shape[2:]:
        receptive_field *= size
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with samples from U(a, b)."""
    _check("uniform_", tensor)
    if a > b:
        raise ValueError(f"init.uniform_: expects a <= b, got a={a}, b={b}")
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with samples from N(mean, std^2)."""
    _check("normal_", tensor)
    if std < 0:
        raise ValueError(f"init.normal_: std must be non-negative, got {std}")
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with `val`."""
    _check("constant_", tensor)
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix."""
    _check("eye_", tensor)
    if tensor.ndim != 2:
        raise ValueError(f"init.eye_: only 2-D tensors are supported, got shape {tuple(tensor.shape)}")
    from numdiff.creation import eye

    with no_grad():
        return tensor.copy_(eye(*tensor.shape, dtype=tensor.dtype))


def _empty_tensor_warning(op: str, tensor: Tensor) -> bool:
    if tensor.numel() == 0:
        warnings.warn(f"init.{op}: initializing a zero-element tensor is a no-op", stacklevel=3)
        return True
    return False


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    _check("xavier_uniform_", tensor)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    _check("xavier_normal_", tensor)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al., 2015); `a` is leaky_relu's slope."""
    _check("kaiming_uniform_", tensor)
    if _empty_tensor_warning("kaiming_uniform_", tensor):
        return tensor
    fan = _fan(tensor, mode)
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan)."""
    _check("kaiming_normal_", tensor)
    if _empty_tensor_warning("kaiming_normal_", tensor):
        return tensor
    fan = _fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


__all__ = [
    "calculate_gain", "constant_", "eye_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
    "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_",
]
