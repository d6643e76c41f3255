"""Linear-algebra layers and reshaping layers: Identity, Linear, Bilinear, Flatten, Unflatten."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from numdiff._ground.args import is_int
from numdiff.creation import empty
from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.nn import init
from numdiff.nn.modules._checks import check_input
from numdiff.nn.modules.module import Module
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Tensor


class Identity(Module):
    """Returns its input unchanged; constructor arguments are accepted and ignored."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """y = x W^T + b for inputs of shape (*, in_features).

    Weight (out_features, in_features) ~ kaiming_uniform_(a=sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in));
    bias ~ U(-1/sqrt(in_features), 1/sqrt(in_features)), as PyTorch.

    >>> Linear(3, 2)(numdiff.randn(4, 3)).shape
    numdiff.Size([4, 2])
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        for argument, value in (("in_features", in_features), ("out_features", out_features)):
            if not is_int(value):
                raise TypeError(f"Linear: {argument} must be an int, got {value!r} ({type(value).__name__})")
        if in_features < 0 or out_features < 0:
            raise ValueError(f"Linear: in_features and out_features must be non-negative, got {in_features} and {out_features}")
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        shape = input._data.shape if isinstance(input, Tensor) else None
        if not shape or shape[-1] != self.in_features:  # the message is built only when it is needed
            check_input(self, input, False, f"(*, {self.in_features})")
        params = self._parameters
        if "weight" in params and "bias" in params:
            # Read off the dict: each self.<parameter> is a failed attribute lookup and then Module.__getattr__
            # (1.2 us of a 13 us call on one row). A reparametrized weight (parametrize, weight_norm, pruning)
            # has left _parameters, and is read as an attribute.
            return functional.linear(input, params["weight"], params["bias"])
        return functional.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under PyTorch's name for MultiheadAttention.out_proj, so reprs and checkpoints match."""


class Bilinear(Module):
    """y_k = x1^T A_k x2 + b_k for inputs (*, in1_features) and (*, in2_features)."""

    def __init__(
        self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in1_features, in2_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        check_input(self, input1, input1.ndim >= 1 and input1.shape[-1] == self.in1_features, f"(*, {self.in1_features}) for input1")
        check_input(
            self,
            input2,
            input2.shape[-1:] == (self.in2_features,) and input2.shape[:-1] == input1.shape[:-1],
            f"{tuple(input1.shape[:-1]) + (self.in2_features,)} for input2 (input1 is {tuple(input1.shape)})",
        )
        return functional.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class Flatten(Module):
    """Merge dims start_dim..end_dim into one (by default all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dimension `dim` into `unflattened_size`."""

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)) or not all(isinstance(s, int) for s in unflattened_size):
            raise TypeError(f"Unflatten: unflattened_size must be a tuple of ints, got {unflattened_size!r}")
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
