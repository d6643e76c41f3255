"""Pooling layers over numdiff.nn.functional's pooling kernels; unbatched inputs are accepted."""

from __future__ import annotations

from typing import Any

from numdiff._ground.args import int_tuple
from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.nn.modules._checks import check_input, unbatched
from numdiff.nn.modules.module import Module
from numdiff.tensor import Tensor


def _check_spatial(module: Module, input: Tensor, dims: int) -> None:
    spatial = ("L", "H, W", "D, H, W")[dims - 1]
    check_input(module, input, input.ndim in (dims + 1, dims + 2), f"(N, C, {spatial}) or (C, {spatial})")


def _single(value: Any, name: str = "kernel_size") -> tuple:
    # AvgPool1d stores 1-tuples, as PyTorch's does (and prints them).
    return int_tuple("AvgPool1d", name, value, 1, 0, expand=True)


class _MaxPoolNd(Module):
    _dims = 0

    def __init__(
        self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
        return_indices: bool = False, ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of (N, C, L) inputs."""

    _dims = 1

    def forward(self, input: Tensor) -> Any:
        _check_spatial(self, input, 1)
        return unbatched(
            lambda x: functional.max_pool1d(
                x, self.kernel_size, self.stride, self.padding, self.dilation,
                ceil_mode=self.ceil_mode, return_indices=self.return_indices,
            ),
            input,
            3,
        )


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of (N, C, H, W) inputs.

    >>> MaxPool2d(2)(numdiff.randn(1, 3, 4, 4)).shape
    numdiff.Size([1, 3, 2, 2])
    """

    _dims = 2

    def forward(self, input: Tensor) -> Any:
        _check_spatial(self, input, 2)
        return unbatched(
            lambda x: functional.max_pool2d(
                x, self.kernel_size, self.stride, self.padding, self.dilation,
                ceil_mode=self.ceil_mode, return_indices=self.return_indices,
            ),
            input,
            4,
        )


class MaxPool3d(_MaxPoolNd):
    """Max over sliding windows of (N, C, D, H, W) inputs.

    >>> MaxPool3d(2)(numdiff.randn(1, 3, 4, 4, 4)).shape
    numdiff.Size([1, 3, 2, 2, 2])
    """

    _dims = 3

    def forward(self, input: Tensor) -> Any:
        _check_spatial(self, input, 3)
        return unbatched(
            lambda x: functional.max_pool3d(
                x, self.kernel_size, self.stride, self.padding, self.dilation,
                ceil_mode=self.ceil_mode, return_indices=self.return_indices,
            ),
            input,
            5,
        )


class AvgPool1d(Module):
    """Mean over sliding windows of (N, C, L) inputs."""

    def __init__(
        self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False, count_include_pad: bool = True
    ) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size, "stride")
        self.padding = _single(padding, "padding")
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        _check_spatial(self, input, 1)
        return unbatched(
            lambda x: functional.avg_pool1d(
                x, self.kernel_size, self.stride, self.padding,
                ceil_mode=self.ceil_mode, count_include_pad=self.count_include_pad,
            ),
            input,
            3,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """Mean over sliding windows of (N, C, H, W) inputs."""

    def __init__(
        self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
        count_include_pad: bool = True, divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        _check_spatial(self, input, 2)
        kwargs = {"ceil_mode": self.ceil_mode, "count_include_pad": self.count_include_pad}
        if self.divisor_override is not None:
            kwargs["divisor_override"] = self.divisor_override
        return unbatched(lambda x: functional.avg_pool2d(x, self.kernel_size, self.stride, self.padding, **kwargs), input, 4)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool3d(AvgPool2d):
    """Mean over sliding windows of (N, C, D, H, W) inputs.

    >>> AvgPool3d(2)(numdiff.randn(1, 3, 4, 4, 4)).shape
    numdiff.Size([1, 3, 2, 2, 2])
    """

    def forward(self, input: Tensor) -> Tensor:
        _check_spatial(self, input, 3)
        kwargs = {"ceil_mode": self.ceil_mode, "count_include_pad": self.count_include_pad}
        if self.divisor_override is not None:
            kwargs["divisor_override"] = self.divisor_override
        return unbatched(lambda x: functional.avg_pool3d(x, self.kernel_size, self.stride, self.padding, **kwargs), input, 5)


class AdaptiveAvgPool2d(Module):
    """Mean pooling to a fixed output size (H_out, W_out) whatever the input size."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        _check_spatial(self, input, 2)
        return unbatched(lambda x: functional.adaptive_avg_pool2d(x, self.output_size), input, 4)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(Module):
    """Mean pooling of (N, C, L) inputs to a fixed output length."""

    def __init__(self, output_size: int) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        _check_spatial(self, input, 1)
        return unbatched(lambda x: functional.adaptive_avg_pool1d(x, self.output_size), input, 3)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Module):
    """Max pooling to a fixed output size (H_out, W_out) whatever the input size."""

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:
        _check_spatial(self, input, 2)
        return unbatched(lambda x: functional.adaptive_max_pool2d(x, self.output_size, self.return_indices), input, 4)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool3d(AdaptiveAvgPool2d):
    """Mean pooling to a fixed output size (D_out, H_out, W_out) whatever the input size."""

    def forward(self, input: Tensor) -> Tensor:
        _check_spatial(self, input, 3)
        return unbatched(lambda x: functional.adaptive_avg_pool3d(x, self.output_size), input, 5)


class AdaptiveMaxPool3d(AdaptiveMaxPool2d):
    """Max pooling to a fixed output size (D_out, H_out, W_out) whatever the input size."""

    def forward(self, input: Tensor) -> Any:
        _check_spatial(self, input, 3)
        return unbatched(lambda x: functional.adaptive_max_pool3d(x, self.output_size, self.return_indices), input, 5)

