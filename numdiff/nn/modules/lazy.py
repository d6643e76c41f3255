"""Lazy modules: layers whose input size is read from the first input they see (LazyLinear,
LazyConv2d, LazyBatchNorm1d, ...), as PyTorch's.

Until then their weights are `UninitializedParameter`s (and running statistics
`UninitializedBuffer`s). The first call builds the full layer with the inferred size, moves its
values into those same objects (so an optimizer made before the first call holds the right
tensors), and the module becomes that layer: ``type(LazyLinear(3)(x)_module) is Linear``.
"""

from __future__ import annotations

from typing import Any

from numdiff.nn.modules import conv, linear, normalization
from numdiff.nn.modules.module import Module
from numdiff.nn.parameter import UninitializedBuffer, UninitializedParameter
from numdiff.tensor import Tensor


class _LazyModule(Module):
    """Holds the layer's arguments; the first forward builds the layer and becomes it."""

    cls_to_become: type[Module]
    _weights: tuple[str, ...] = ("weight", "bias")
    _statistics: tuple[str, ...] = ()
    _size_dim = 1  # the input dimension that gives the layer's size: channels

    def __init__(self, *args: Any, bias: bool = True, device: Any = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__()
        self._layer_args = (args, {**kwargs, "device": device, "dtype": dtype, **self._bias_argument(bias)})
        for name in self._weights:
            if name != "bias" or bias:
                self.register_parameter(name, UninitializedParameter(device=device, dtype=dtype))
            else:
                self.register_parameter(name, None)
        for name in self._statistics:
            self.register_buffer(name, UninitializedBuffer(device=device, dtype=dtype))

    def _bias_argument(self, bias: bool) -> dict[str, Any]:
        return {"bias": bias}

    def has_uninitialized_params(self) -> bool:
        """Whether the first input has not come yet."""
        return True

    def initialize_parameters(self, input: Tensor) -> None:
        """Build the layer for `input`'s size and become it."""
        if not isinstance(input, Tensor):
            raise TypeError(f"{type(self).__name__}: expected a Tensor input, got {type(input).__name__}")
        if input.ndim <= (self._size_dim if self._size_dim >= 0 else -self._size_dim - 1):
            raise ValueError(f"{type(self).__name__}: cannot infer the input size from an input of shape {tuple(input.shape)}")
        args, kwargs = self._layer_args
        built = self.cls_to_become(input.shape[self._size_dim], *args, **kwargs)
        for kind in ("_parameters", "_buffers"):
            mine, theirs = self.__dict__[kind], built.__dict__[kind]
            for name, value in theirs.items():
                placeholder = mine.get(name)
                if isinstance(placeholder, (UninitializedParameter, UninitializedBuffer)) and value is not None:
                    placeholder.materialize(value)
                    theirs[name] = placeholder
        kept = {key: self.__dict__[key] for key in ("_forward_hooks", "_forward_pre_hooks", "training")}
        self.__dict__.clear()
        self.__dict__.update(built.__dict__)
        self.__dict__.update(kept)
        self.__class__ = self.cls_to_become

    def forward(self, input: Tensor, *args: Any, **kwargs: Any) -> Any:
        self.initialize_parameters(input)
        return self.forward(input, *args, **kwargs)


class LazyLinear(_LazyModule):
    """Linear whose in_features is the last dimension of the first input."""

    cls_to_become = linear.Linear
    _size_dim = -1

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(out_features, bias=bias, device=device, dtype=dtype)


def _lazy_conv(name: str, layer: type[Module]) -> type[_LazyModule]:
    def init(self, out_channels: int, kernel_size: Any, *args: Any, bias: bool = True, device: Any = None, dtype: Any = None, **kwargs: Any) -> None:
        _LazyModule.__init__(self, out_channels, kernel_size, *args, bias=bias, device=device, dtype=dtype, **kwargs)

    doc = f"{layer.__name__} whose in_channels is dimension 1 of the first input (N, C, ...)."
    return type(name, (_LazyModule,), {"__init__": init, "__doc__": doc, "cls_to_become": layer, "__module__": __name__})


LazyConv1d = _lazy_conv("LazyConv1d", conv.Conv1d)
LazyConv2d = _lazy_conv("LazyConv2d", conv.Conv2d)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", conv.ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", conv.ConvTranspose2d)
LazyConv3d = _lazy_conv("LazyConv3d", conv.Conv3d)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", conv.ConvTranspose3d)


def _lazy_norm(name: str, layer: type[Module], affine_default: bool, stats_default: bool) -> type[_LazyModule]:
    def init(self, eps: float = 1e-5, momentum: Any = 0.1, affine: bool = affine_default,
                 track_running_stats: bool = stats_default, device: Any = None, dtype: Any = None) -> None:  # fmt: skip
        Module.__init__(self)
        self._layer_args = ((), {"eps": eps, "momentum": momentum, "affine": affine,
                                 "track_running_stats": track_running_stats, "device": device, "dtype": dtype})  # fmt: skip
        for weight in ("weight", "bias"):
            self.register_parameter(weight, UninitializedParameter(device=device, dtype=dtype) if affine else None)
        if track_running_stats:
            for stat in ("running_mean", "running_var"):
                self.register_buffer(stat, UninitializedBuffer(device=device, dtype=dtype))

    doc = f"{layer.__name__} whose num_features is dimension 1 of the first input (N, C, ...)."
    return type(name, (_LazyModule,), {"__init__": init, "__doc__": doc, "cls_to_become": layer, "__module__": __name__})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", normalization.BatchNorm1d, True, True)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", normalization.BatchNorm2d, True, True)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", normalization.InstanceNorm1d, False, False)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", normalization.InstanceNorm2d, False, False)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", normalization.BatchNorm3d, True, True)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", normalization.InstanceNorm3d, False, False)
