"""Module forms of the functions in numdiff.nn._more_functional: unpooling, power-average and
1-D adaptive max pooling, Softmax2d, ChannelShuffle, and two margin losses; and FractionalMaxPool2d
(numdiff.nn._fractional_pool)."""

from __future__ import annotations

from typing import Any

from numdiff.nn import _more_functional as functional
from numdiff.nn._fractional_pool import fractional_max_pool2d
from numdiff.nn.modules.loss import NLLLoss
from numdiff.nn.modules.module import Module
from numdiff.ops.activation import softmax
from numdiff.tensor import Tensor


class _MaxUnpoolNd(Module):
    _function: Any

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride if stride is not None else kernel_size, padding

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        return type(self)._function(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The inverse of MaxPool1d(return_indices=True): values back at their maxima's positions."""

    _function = staticmethod(functional.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The inverse of MaxPool2d(return_indices=True): values back at their maxima's positions."""

    _function = staticmethod(functional.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The inverse of MaxPool3d(return_indices=True): values back at their maxima's positions."""

    _function = staticmethod(functional.max_unpool3d)


class _LPPoolNd(Module):
    _function: Any

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._function(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, ceil_mode={self.ceil_mode}"


class LPPool1d(_LPPoolNd):
    """The power-average pool over the last dimension: (sum of x^p over a window)^(1/p)."""

    _function = staticmethod(functional.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """The power-average pool over the last two dimensions: (sum of x^p over a window)^(1/p)."""

    _function = staticmethod(functional.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """The power-average pool over the last three dimensions: (sum of x^p over a window)^(1/p)."""

    _function = staticmethod(functional.lp_pool3d)


class AdaptiveMaxPool1d(Module):
    """The maximum over `output_size` adaptive windows of the last dimension."""

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor) -> Any:
        return functional.adaptive_max_pool1d(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class Softmax2d(Module):
    """Softmax over the channels of a (N, C, H, W) or (C, H, W) input, at each position."""

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected a 3-D or 4-D input, got shape {tuple(input.shape)}")
        return softmax(input, -3)


class ChannelShuffle(Module):
    """Regroups the channels: (N, g, C/g, *) transposed to (N, C/g, g, *)."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return functional.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class MultiLabelMarginLoss(Module):
    """The multi-class multi-label hinge loss (functional.multilabel_margin_loss)."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__()
        self.size_average, self.reduce, self.reduction = size_average, reduce, reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return functional.multilabel_margin_loss(input, target, self.size_average, self.reduce, self.reduction)


class TripletMarginWithDistanceLoss(Module):
    """The triplet loss with a distance function of the user's (functional.triplet_margin_with_distance_loss)."""

    def __init__(self, *, distance_function: Any = None, margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> None:
        super().__init__()
        self.distance_function, self.margin, self.swap, self.reduction = distance_function, margin, swap, reduction

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return functional.triplet_margin_with_distance_loss(anchor, positive, negative, distance_function=self.distance_function,
                                                   margin=self.margin, swap=self.swap, reduction=self.reduction)  # fmt: skip


class NLLLoss2d(NLLLoss):
    """PyTorch's deprecated name of NLLLoss for (N, C, H, W) inputs: the same loss."""


class FractionalMaxPool2d(Module):
    """Max over `kernel_size` windows at pseudo-random increasing offsets, down to `output_size` or
    input size * `output_ratio` (see numdiff.nn.functional.fractional_max_pool2d).

    >>> FractionalMaxPool2d(3, output_ratio=0.5)(numdiff.randn(1, 2, 8, 8)).shape
    numdiff.Size([1, 2, 4, 4])
    """

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:  # fmt: skip
        super().__init__()
        if output_size is None and output_ratio is None:
            raise ValueError(
                "FractionalMaxPool2d requires specifying either an output size, or a pooling ratio"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError("FractionalMaxPool2d: give only one of output_size and output_ratio")
        self.kernel_size, self.output_size, self.output_ratio = kernel_size, output_size, output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input: Tensor) -> Any:
        return fractional_max_pool2d(input, self.kernel_size, self.output_size, self.output_ratio,
                                     self.return_indices, self._random_samples)  # fmt: skip
