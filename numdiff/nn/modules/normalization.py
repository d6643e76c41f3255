"""Normalisation layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d (running statistics as buffers),
GroupNorm and LayerNorm."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from numdiff import _dtype, _inplace
from numdiff._ground.args import is_int
from numdiff.autograd.grad_mode import no_grad
from numdiff.creation import empty, ones, tensor, zeros
from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.nn import init
from numdiff.nn.modules._checks import check_input, unbatched
from numdiff.nn.modules.module import Module
from numdiff.nn.parameter import Parameter
from numdiff.ops._util import int_sequence
from numdiff.tensor import Tensor


def _affine_parameters(module: Module, shape: tuple[int, ...], affine: bool, bias: bool, dtype: Any, device: Any) -> None:
    """`module.weight` (and, with `bias`, `module.bias`) of `shape` when `affine`, else both None;
    their values come from `_reset_affine`."""
    if affine:
        module.weight = Parameter(empty(*shape, dtype=dtype, device=device))
        if bias:
            module.bias = Parameter(empty(*shape, dtype=dtype, device=device))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module: Module) -> None:
    """Weight ones, bias zeros: the identity until trained."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


def _count_batch(num_batches_tracked: Tensor) -> None:
    """``num_batches_tracked += 1`` under no_grad; straight into the storage where that write
    records nothing (numdiff._inplace.write_at), ~0.5 us against ~10 for the in-place op's path."""
    if _inplace.records_nothing(num_batches_tracked, None):
        _inplace.write_at(num_batches_tracked, "add_", Ellipsis, num_batches_tracked._data + 1)
    else:
        with no_grad():
            num_batches_tracked.add_(1)


class _BatchNorm(Module):
    """Shared state and forward of BatchNorm1d/2d; subclasses say which input shapes they take."""

    _expected = ""
    _ndims: tuple[int, ...] = ()

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, (num_features,), affine, bias, dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=_dtype.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches seen."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        ok = input.ndim in self._ndims and input.shape[1] == self.num_features
        check_input(self, input, ok, self._expected.format(c=self.num_features))
        average_factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            _count_batch(self.num_batches_tracked)
            if self.momentum is None:
                # No momentum: a cumulative average over every batch seen so far.
                average_factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return functional.batch_norm(
            input,
            self.running_mean if track else None,
            self.running_var if track else None,
            self.weight,
            self.bias,
            use_batch_stats,
            average_factor,
            self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs over N (and L), per channel C.

    Training normalises by the batch statistics and updates `running_mean` and `running_var`
    (unbiased) by `momentum`; eval mode normalises by the running statistics.
    """

    _expected = "(N, {c}) or (N, {c}, L)"
    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) inputs over N, H and W, per channel C."""

    _expected = "(N, {c}, H, W)"
    _ndims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) inputs over N, D, H and W, per channel C."""

    _expected = "(N, {c}, D, H, W)"
    _ndims = (5,)


class LayerNorm(Module):
    """Normalise over the trailing `normalized_shape` dims of each sample, then scale and shift.

    >>> LayerNorm(4)(numdiff.randn(2, 4)).shape
    numdiff.Size([2, 4])
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = (int(normalized_shape),) if is_int(normalized_shape) else int_sequence(
            "LayerNorm", "normalized_shape", normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        count = len(self.normalized_shape)
        ok = input.ndim >= count and tuple(input.shape[input.ndim - count :]) == self.normalized_shape
        check_input(self, input, ok, "(*, " + ", ".join(map(str, self.normalized_shape)) + ")")
        return functional.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
            f"bias={self.bias is not None}"
        )


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing `normalized_shape` dims of each sample,
    then a learned scale (no shift): ``x / sqrt(mean(x**2) + eps) * weight``. eps None is the
    machine epsilon of the input's dtype.

    >>> RMSNorm(4)(numdiff.randn(2, 4)).shape
    numdiff.Size([2, 4])
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = (int(normalized_shape),) if is_int(normalized_shape) else int_sequence(
            "LayerNorm", "normalized_shape", normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(*self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return functional.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _InstanceNorm(_BatchNorm):
    """InstanceNorm1d/2d/3d: BatchNorm's state with PyTorch's instance defaults (no affine, no running
    statistics); each (sample, channel) is normalised over its own positions."""

    _batched_ndim = 0

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        batched = self._batched_ndim
        ok = input.ndim in (batched - 1, batched) and input.shape[input.ndim - batched + 1] == self.num_features
        check_input(self, input, ok, self._expected.format(c=self.num_features))
        use_input_stats = self.training or not self.track_running_stats
        momentum = 0.0 if self.momentum is None else self.momentum  # as PyTorch: None keeps the estimates

        def normalise(x: Tensor) -> Tensor:
            return functional.instance_norm(
                x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats, momentum, self.eps
            )

        return unbatched(normalise, input, batched)

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L) inputs over L, per sample and channel."""

    _expected = "(N, {c}, L) or ({c}, L)"
    _batched_ndim = 3


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) inputs over H and W, per sample and channel."""

    _expected = "(N, {c}, H, W) or ({c}, H, W)"
    _batched_ndim = 4


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W) inputs over D, H and W, per sample and channel."""

    _expected = "(N, {c}, D, H, W) or ({c}, D, H, W)"
    _batched_ndim = 5


class GroupNorm(Module):
    """Normalise each sample's channels in groups, then scale and shift per channel.

    >>> GroupNorm(2, 4)(numdiff.randn(3, 4, 5)).shape
    numdiff.Size([3, 4, 5])
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, (num_channels,), affine, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        ok = input.ndim >= 2 and input.shape[1] == self.num_channels
        check_input(self, input, ok, f"(N, {self.num_channels}, *)")
        return functional.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self.bias is not None}"
