"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d over nn.functional's conv ops."""

from __future__ import annotations

import math
from typing import Any

from numdiff._ground.args import int_tuple
from numdiff.creation import empty
from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.nn import init
from numdiff.nn.modules._checks import check_input, unbatched
from numdiff.nn.modules.module import Module
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Tensor

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(name: str, value: Any, n: int) -> tuple[int, ...]:
    """An int or n ints (NumPy ints too) of a layer's `name` ("Conv2d: stride"); floats, bools,
    None and wrong lengths are a TypeError or ValueError naming the layer and the argument."""
    layer, _, argument = name.partition(": ")
    return int_tuple(layer, argument, value, n, 0, expand=True)


class _ConvNd(Module):
    """Shared construction, initialisation and printing of the convolution layers."""

    _dims = 0
    _transposed = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any,
        padding: Any,
        dilation: Any,
        groups: int,
        bias: bool,
        padding_mode: str,
        output_padding: Any = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        name, n = type(self).__name__, self._dims
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible "
                f"by groups ({groups}), which must be positive"
            )
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(f"{name}: kernel_size", kernel_size, n)
        self.stride = _tuple(f"{name}: stride", stride, n)
        self.dilation = _tuple(f"{name}: dilation", dilation, n)
        self.output_padding = _tuple(f"{name}: output_padding", output_padding, n)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: padding must be 'same', 'valid', an int or a tuple, got {padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions (stride={self.stride})")
            self.padding = padding
        else:
            self.padding = _tuple(f"{name}: padding", padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform_(a=sqrt(5)) weight, U(-1/sqrt(fan_in), ..) bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def _explicit_padding(self) -> list[tuple[int, int]]:
        """(before, after) per spatial dim; 'same' puts the odd element after, as PyTorch."""
        if self.padding == "valid":
            return [(0, 0)] * self._dims
        if self.padding == "same":
            pairs = []
            for k, d in zip(self.kernel_size, self.dilation):
                total = d * (k - 1)
                pairs.append((total // 2, total - total // 2))
            return pairs
        return [(p, p) for p in self.padding]

    def _padded(self, input: Tensor) -> tuple[Tensor, tuple[int, ...]]:
        """The input with any padding that conv's own symmetric zero padding cannot express applied."""
        pairs = self._explicit_padding()
        if self.padding_mode == "zeros" and all(a == b for a, b in pairs):
            return input, tuple(a for a, _ in pairs)
        amounts = []
        for before, after in reversed(pairs):
            amounts += [before, after]
        mode = "constant" if self.padding_mode == "zeros" else self.padding_mode
        return functional.pad(input, amounts, mode=mode), (0,) * self._dims

    def _error_name(self) -> str:
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size})"

    def _check(self, input: Tensor, spatial: str) -> None:
        c = self.in_channels
        shape = input._data.shape if isinstance(input, Tensor) else None
        if shape is not None and len(shape) in (self._dims + 1, self._dims + 2) and shape[-self._dims - 1] == c:
            return  # the messages below are built only for a wrong input
        check_input(self, input, False, f"(N, {c}, {spatial}) or ({c}, {spatial})", self._error_name())

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._dims:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._dims:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    """The forward convolutions: PyTorch's constructor signature and a forward over the layer's
    functional conv, batched or unbatched."""

    _spatial = ""

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
        dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device: Any = None, dtype: Any = None,
    ) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                         device=device, dtype=dtype)

    def forward(self, input: Tensor) -> Tensor:
        self._check(input, self._spatial)
        padded, padding = self._padded(input)
        conv = (functional.conv1d, functional.conv2d, functional.conv3d)[self._dims - 1]
        return unbatched(
            lambda x: conv(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups), padded, self._dims + 2
        )


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) inputs (or unbatched (C_in, L))."""

    _dims = 1
    _spatial = "L"


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) inputs (or unbatched (C_in, H, W)).

    >>> Conv2d(1, 8, 3)(numdiff.randn(4, 1, 8, 8)).shape
    numdiff.Size([4, 8, 6, 6])
    """

    _dims = 2
    _spatial = "H, W"


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) inputs (or unbatched (C_in, D, H, W)).

    >>> Conv3d(1, 4, 3, padding=1)(numdiff.randn(2, 1, 4, 5, 6)).shape
    numdiff.Size([2, 4, 4, 5, 6])
    """

    _dims = 3
    _spatial = "D, H, W"


class _ConvTransposeNd(_ConvNd):
    """Shared checks and output_size handling of the transposed convolutions."""

    _transposed = True
    _spatial = ""

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
        output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1, padding_mode: str = "zeros",
        device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(f'{name}: only "zeros" padding_mode is supported, got {padding_mode!r}')
        if isinstance(padding, str):
            raise ValueError(f"{name}: padding must be an int or a tuple, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                         output_padding, device=device, dtype=dtype)
        for extra, s, d in zip(self.output_padding, self.stride, self.dilation):
            if extra >= max(s, d):
                raise ValueError(
                    f"{name}: output_padding {self.output_padding} must be smaller than either stride "
                    f"{self.stride} or dilation {self.dilation}"
                )

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        """output_padding that makes the output `output_size` (its last dims), checked reachable."""
        if output_size is None:
            return self.output_padding
        n, name = self._dims, type(self).__name__
        size = tuple(output_size)[-n:]
        if len(size) != n:
            raise ValueError(f"{name}: output_size must end with {n} spatial sizes, got {tuple(output_size)!r}")
        extra = []
        for i in range(n):
            k, s, p, d = self.kernel_size[i], self.stride[i], self.padding[i], self.dilation[i]
            smallest = (input.shape[i - n] - 1) * s - 2 * p + d * (k - 1) + 1
            largest = smallest + max(s, d) - 1
            if not smallest <= size[i] <= largest:
                raise ValueError(
                    f"{name}: requested output_size {size} is not reachable from input {tuple(input.shape)}: "
                    f"dimension {i} must be in [{smallest}, {largest}]"
                )
            extra.append(size[i] - smallest)
        return tuple(extra)

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        self._check(input, self._spatial)
        output_padding = self._output_padding(input, output_size)
        transpose = (functional.conv_transpose1d, functional.conv_transpose2d, functional.conv_transpose3d)[self._dims - 1]
        return unbatched(
            lambda x: transpose(x, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation),
            input,
            self._dims + 2,
        )


class ConvTranspose1d(_ConvTransposeNd):
    """The gradient of Conv1d with respect to its input, as a layer, over (N, C_in, L) inputs."""

    _dims = 1
    _spatial = "L"


class ConvTranspose2d(_ConvTransposeNd):
    """The gradient of Conv2d with respect to its input, as a layer (a "deconvolution").

    >>> ConvTranspose2d(2, 1, 3, stride=2)(numdiff.randn(1, 2, 4, 4)).shape
    numdiff.Size([1, 1, 9, 9])
    """

    _dims = 2
    _spatial = "H, W"


class ConvTranspose3d(_ConvTransposeNd):
    """The gradient of Conv3d with respect to its input, as a layer, over (N, C_in, D, H, W) inputs.

    >>> ConvTranspose3d(2, 1, 3, stride=2)(numdiff.randn(1, 2, 2, 3, 4)).shape
    numdiff.Size([1, 1, 5, 7, 9])
    """

    _dims = 3
    _spatial = "D, H, W"
