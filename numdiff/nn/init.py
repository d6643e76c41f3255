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

import numpy as np

from numdiff._random import Generator
from numdiff.autograd.grad_mode import no_grad
from numdiff.backend import holds_values
from numdiff.creation import empty, randperm
from numdiff.creation import tensor as as_tensor
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
    if not holds_values(tensor._data):
        return tensor  # a meta tensor: nothing to fill (and no host identity of its size to make)
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


def _host_values(tensor: Tensor) -> np.ndarray:
    return tensor.detach().cpu().numpy()


def _write(tensor: Tensor, values: np.ndarray) -> Tensor:
    """Copy host `values` into `tensor` (on its device), under no_grad."""
    with no_grad():
        return tensor.copy_(as_tensor(values.reshape(tuple(tensor.shape)), dtype=tensor.dtype))


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Generator | None = None,
) -> Tensor:
    """Fill with N(mean, std^2) truncated to [a, b], by the inverse CDF: uniform samples between
    the CDF's values at a and b, mapped back through erfinv, then clamped to [a, b] against rounding.

    >>> numdiff.nn.init.trunc_normal_(numdiff.empty(3, 5), std=0.02)   # ViT's weight init
    """
    _check("trunc_normal_", tensor)
    if not a < b:
        raise ValueError(f"init.trunc_normal_: expects a < b, got a={a}, b={b}")
    if std < 0:
        raise ValueError(f"init.trunc_normal_: std must be non-negative, got {std}")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            f"init.trunc_normal_: mean={mean} is more than 2 std (std={std}) from [a, b] = [{a}, {b}]; "
            "the distribution of values may be incorrect.",
            stacklevel=2,
        )
    if not holds_values(tensor._data):
        return tensor  # a meta tensor: nothing to fill
    from scipy.special import erfinv

    low = _normal_cdf((a - mean) / std)
    high = _normal_cdf((b - mean) / std)
    # U(2 cdf(a) - 1, 2 cdf(b) - 1) is the range of erf((x - mean) / (std sqrt 2)) for x in [a, b].
    with no_grad():
        tensor.uniform_(2 * low - 1, 2 * high - 1, generator=generator)
    values = erfinv(_host_values(tensor)) * (std * math.sqrt(2.0)) + mean
    return _write(tensor, np.clip(values, a, b))


def _normal_cdf(x: float) -> float:
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Generator | None = None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix times `gain` (Saxe et al., 2013): Q of the QR of a
    Gaussian matrix, each column's sign set by R's diagonal so Q is uniform over orthogonal
    matrices. A tensor of more than 2 dimensions is viewed as (shape[0], product of the rest).

    >>> w = numdiff.nn.init.orthogonal_(numdiff.empty(3, 5))   # w @ w.T is the identity
    """
    _check("orthogonal_", tensor)
    if tensor.ndim < 2:
        raise ValueError(
            f"init.orthogonal_: only tensors with 2 or more dimensions are supported, got shape {tuple(tensor.shape)}"
        )
    if tensor.numel() == 0 or not holds_values(tensor._data):
        return tensor  # nothing to fill (an empty or a meta tensor)

    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    gaussian = _host_values(empty(rows, cols, dtype=tensor.dtype).normal_(0, 1, generator=generator))
    wide = rows < cols
    if wide:
        gaussian = gaussian.T
    q, r = np.linalg.qr(gaussian)
    q = q * np.sign(np.diagonal(r))
    if wide:
        q = q.T
    return _write(tensor, q * gain)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None) -> Tensor:
    """Fill a 2-D tensor with N(0, std^2) samples, then zero ``ceil(sparsity * rows)`` randomly
    chosen entries of every column (Martens, 2010).

    >>> numdiff.nn.init.sparse_(numdiff.empty(10, 4), sparsity=0.3)   # 3 zeros per column
    """
    _check("sparse_", tensor)
    if tensor.ndim != 2:
        raise ValueError(f"init.sparse_: only tensors with 2 dimensions are supported, got shape {tuple(tensor.shape)}")
    if not 0 <= sparsity <= 1:
        raise ValueError(f"init.sparse_: sparsity must be in [0, 1], got {sparsity}")

    if not holds_values(tensor._data):
        return tensor  # a meta tensor: nothing to fill
    rows, cols = tensor.shape
    zeros_per_column = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
    values = _host_values(tensor).copy()
    for col in range(cols):
        zero_rows = randperm(rows, generator=generator).numpy()[:zeros_per_column]
        values[zero_rows, col] = 0
    return _write(tensor, values)


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D convolution weight with the Dirac delta, so the convolution passes its
    input through: out channel g*n + d (n = out channels per group) copies in channel d of group g.

    >>> w = numdiff.nn.init.dirac_(numdiff.empty(4, 4, 3, 3))   # conv2d(x, w, padding=1) == x
    """
    _check("dirac_", tensor)
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"init.dirac_: only tensors with 3, 4, or 5 dimensions are supported, got shape {tuple(tensor.shape)}")
    if groups < 1 or tensor.shape[0] % groups:
        raise ValueError(f"init.dirac_: dim 0 (size {tensor.shape[0]}) must be divisible by groups={groups}")
    if not holds_values(tensor._data):
        return tensor  # a meta tensor: nothing to fill
    out_per_group = tensor.shape[0] // groups
    centre = tuple(size // 2 for size in tensor.shape[2:])
    values = np.zeros(tuple(tensor.shape), dtype=_host_values(tensor).dtype)
    for g in range(groups):
        for d in range(min(out_per_group, tensor.shape[1])):
            values[(g * out_per_group + d, d, *centre)] = 1
    return _write(tensor, values)


def _deprecated(new: Any) -> Any:
    """PyTorch's old init names without the trailing underscore: warn, then call the new one."""
    old_name = new.__name__[:-1]

    def old(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(
            f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new.__name__}`.", FutureWarning, stacklevel=2
        )
        return new(*args, **kwargs)

    old.__name__ = old.__qualname__ = old_name
    old.__doc__ = f"Deprecated: use {new.__name__}."
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)

__all__ = [
    "calculate_gain", "constant_", "eye_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
    "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_",
]
__all__ += ["dirac_", "orthogonal_", "sparse_", "trunc_normal_"]
__all__ += [
    "constant", "dirac", "eye", "kaiming_normal", "kaiming_uniform", "normal", "orthogonal", "sparse", "uniform",
    "xavier_normal", "xavier_uniform",
]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
