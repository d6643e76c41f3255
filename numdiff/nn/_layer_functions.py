"""bilinear, alpha_dropout and local_response_norm: compositions of matmul, random masks, slices
and elementwise ops (their gradients come from those)."""

from __future__ import annotations

import math
from typing import Any

from numdiff import _inplace
from numdiff.creation import rand
from numdiff.nn._functional_layers import pad
from numdiff.ops._util import ensure_tensor
from numdiff.ops.linalg import matmul
from numdiff.ops.selection import where
from numdiff.tensor import Tensor

# SELU's negative saturation value, -scale * alpha (Klambauer et al.): where alpha_dropout drops to.
_SELU_SATURATION = -1.7580993408473766


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y_k = x1^T A_k x2 + b_k: inputs (*, in1) and (*, in2), weight (out, in1, in2), bias (out,).

    >>> F.bilinear(numdiff.ones(2, 3), numdiff.ones(2, 4), numdiff.ones(5, 3, 4)).shape
    numdiff.Size([2, 5])
    """

    input1, input2 = ensure_tensor("bilinear", input1, "input1"), ensure_tensor("bilinear", input2, "input2")
    weight = ensure_tensor("bilinear", weight, "weight")
    if weight.ndim != 3:
        raise ValueError(f"bilinear: weight must be 3-D (out, in1, in2), got shape {tuple(weight.shape)}")
    out, in1, in2 = weight.shape
    if input1.ndim < 1 or input1.shape[-1] != in1 or input2.shape[-1:] != (in2,) or input2.shape[:-1] != input1.shape[:-1]:
        raise ValueError(
            f"bilinear: expects input1 (*, {in1}) and input2 (*, {in2}) with the same leading dims for weight of shape "
            f"{tuple(weight.shape)}, got {tuple(input1.shape)} and {tuple(input2.shape)}"
        )
    if bias is not None and tuple(bias.shape) != (out,):
        raise ValueError(f"bilinear: bias must have shape ({out},) for weight of shape {tuple(weight.shape)}, got {tuple(bias.shape)}")
    # x1 A_k for every k at once: (*, in1) @ (in1, out * in2), then contract with x2 over in2.
    stacked = weight.permute(1, 0, 2).reshape(in1, out * in2)
    left = matmul(input1, stacked).reshape(tuple(input1.shape[:-1]) + (out, in2))
    result = (left * input2.unsqueeze(-2)).sum(-1)
    return result + bias if bias is not None else result


def _alpha_dropout(op: str, input: Any, p: float, training: bool, inplace: bool, mask_shape: Any = None) -> Tensor:
    """alpha_dropout with one draw per element of `mask_shape` (broadcast over the input)."""

    input = ensure_tensor(op, input)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        scale, shift = 0.0, 0.0
    else:
        shape = tuple(input.shape) if mask_shape is None else mask_shape
        keep = (rand(*shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)
        # Dropped units become the saturation value, then an affine map restores zero mean and
        # unit variance for a zero-mean, unit-variance input: a * (kept x or saturation) + b.
        a = ((1.0 - p) * (1.0 + p * _SELU_SATURATION**2)) ** -0.5
        b = -a * _SELU_SATURATION * p
        scale, shift = keep * a, keep * (-a * _SELU_SATURATION) + (a * _SELU_SATURATION + b)
    if inplace:
        return _inplace.apply_inplace(input, f"{op}_", lambda x: x * scale + shift)
    return input * scale + shift


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped elements take SELU's saturation value and the result is
    rescaled to keep zero mean and unit variance. Identity unless training.

    >>> F.alpha_dropout(numdiff.ones(3), 0.5, training=False)
    tensor([1., 1., 1.])
    """
    return _alpha_dropout("alpha_dropout", input, p, training, inplace)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """alpha_dropout of whole channels: one draw per (batch, channel) of an (N, C, ...) input.

    >>> F.feature_alpha_dropout(numdiff.ones(2, 3, 4), 0.5).shape
    numdiff.Size([2, 3, 4])
    """
    input = ensure_tensor("feature_alpha_dropout", input)
    if input.ndim < 2:
        raise ValueError(f"feature_alpha_dropout: expects an input of at least 2 dims (N, C, ...), got shape {tuple(input.shape)}")
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, mask_shape)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels) ** beta, for an
    (N, C, ...) input; the window is centred, zero-padded (size // 2 before, (size - 1) // 2 after).

    >>> F.local_response_norm(numdiff.ones(1, 3, 2), 2).shape
    numdiff.Size([1, 3, 2])
    """
    input = ensure_tensor("local_response_norm", input)
    if input.ndim < 3:
        raise ValueError(f"local_response_norm: expects an input of at least 3 dims (N, C, *), got shape {tuple(input.shape)}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"local_response_norm: size must be a positive int, got {size!r}")
    channels = input.shape[1]
    squares = input * input
    # pad's pairs run from the last dim: zeros before and after dim 1 only
    widths = [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2]
    padded = pad(squares, tuple(widths))
    window = padded.narrow(1, 0, channels)
    for offset in range(1, size):
        window = window + padded.narrow(1, offset, channels)
    return input / (window * (alpha / size) + k) ** beta



def cross_map_lrn2d(input: Tensor, size: int, alpha: float, beta: float, k: float) -> Tensor:
    """nn.CrossMapLRN2d's forward, PyTorch's values: x / (k + alpha / size * window) ** beta for an
    (N, C, H, W) input, where channel c's window sums the squares of channels c - p + 1 .. c + p - 1
    (p = (size - 1) // 2 + 1) and, from c = p on, channel 0's too: PyTorch's running sum never takes
    channel 0 out again. The gradient is this forward's (PyTorch's hand-written backward fails its own
    gradcheck), composed of differentiable ops. Values of very different sizes can differ from PyTorch's
    in the last digits, as its running sum subtracts the squares that leave the window.
    """
    input = ensure_tensor("CrossMapLRN2d", input)
    if input.ndim != 4:
        raise ValueError(f"CrossMapLRN2d: expects a 4D input (N, C, H, W), got shape {tuple(input.shape)}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"CrossMapLRN2d: size must be a positive int, got {size!r}")
    channels = input.shape[1]
    reach = (size - 1) // 2  # p - 1 channels either side
    squares = input * input
    padded = pad(squares, (0, 0, 0, 0, reach, reach))
    window = padded.narrow(1, 0, channels)
    for offset in range(1, 2 * reach + 1):
        window = window + padded.narrow(1, offset, channels)
    if channels > reach + 1:
        after = (0, 0, 0, 0, reach + 1, 0)  # pads channels 0 .. p - 1, where neither applies
        first = squares.narrow(1, 0, 1).expand(input.shape[0], channels - reach - 1, *input.shape[2:])
        window = window + pad(first, after)
        # A NaN or inf square that has left the running sum leaves NaN behind in every later channel
        # (inf - inf); channel 0's never leaves. Counts of such squares in channels 1 .. c - p:
        bad = (~squares.isfinite()).to(input.dtype).cumsum(1)
        left_behind = pad((bad - bad.narrow(1, 0, 1)).narrow(1, 0, channels - reach - 1), after)
        window = where(left_behind > 0.0, math.nan, window)
    return input / (window * (alpha / size) + k) ** beta

def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: x for x >= 0, else a * x, with a drawn uniformly from [lower, upper]
    per element while training (numdiff's generator, so manual_seed fixes it) and
    ``(lower + upper) / 2`` otherwise. The gradient of a negative element is its slope.

    >>> F.rrelu(numdiff.tensor([-3.0, 2.0]), 0.25, 0.75)
    tensor([-1.5000,  2.0000])
    """

    input = ensure_tensor("rrelu", input)
    if not input.is_floating_point():
        raise TypeError(f"rrelu: expected a floating point input, got dtype {input.dtype!r}")
    if not 0.0 <= lower <= upper:
        raise ValueError(f"rrelu: expected 0 <= lower <= upper, got lower={lower} and upper={upper}")
    if training:
        slope = rand(*input.shape, dtype=input.dtype, device=input.device) * (upper - lower) + lower
    else:
        slope = (lower + upper) / 2.0

    def compute(x: Tensor) -> Tensor:
        return where(x >= 0, x, x * slope)

    return _inplace.apply_inplace(input, "rrelu_", compute) if inplace else compute(input)
