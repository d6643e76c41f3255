"""Activation layers: thin Modules over numdiff.nn.functional's activations (and, as in PyTorch,
MultiheadAttention is importable from here)."""

from __future__ import annotations

from numdiff.creation import full
from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.nn import init
from numdiff.nn._legacy import implicit_softmax_dim
from numdiff.nn.modules.attention import MultiheadAttention  # PyTorch keeps it in this module
from numdiff.nn.modules.module import Module
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Tensor


class ReLU(Module):
    """max(x, 0), elementwise."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return functional.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """x for x > 0, else negative_slope * x."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return functional.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x for x > 0, else alpha * (exp(x) - 1)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return functional.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """x * Phi(x); approximate="tanh" for the tanh form."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return functional.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """tanh(x), elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        return functional.tanh(input)


class Sigmoid(Module):
    """1 / (1 + exp(-x)), elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        return functional.sigmoid(input)


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, linear above `threshold`."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return functional.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class _Elementwise(Module):
    """An activation module over one functional, with PyTorch's constructor arguments as fields:
    subclasses list them in `_arguments` (name, default) and name the functional in `_function`."""

    _function = ""
    _arguments: tuple[tuple[str, object], ...] = ()

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__()
        names = [name for name, _ in self._arguments]
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes at most {len(names)} arguments, got {len(args)}")
        unknown = set(kwargs) - set(names)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword arguments {sorted(unknown)}")
        values = dict(self._arguments) | dict(zip(names, args)) | kwargs
        for name in names:
            setattr(self, name, values[name])

    def forward(self, input: Tensor) -> Tensor:
        arguments = [getattr(self, name) for name, _ in self._arguments]
        return getattr(functional, self._function)(input, *arguments)

    def extra_repr(self) -> str:
        return ", ".join(f"{name}={getattr(self, name)}" for name, default in self._arguments if name != "inplace" or getattr(self, name))


class SiLU(_Elementwise):
    """x * sigmoid(x)."""

    _function, _arguments = "silu", (("inplace", False),)


class Mish(_Elementwise):
    """x * tanh(softplus(x))."""

    _function, _arguments = "mish", (("inplace", False),)


class Hardswish(_Elementwise):
    """x * relu6(x + 3) / 6."""

    _function, _arguments = "hardswish", (("inplace", False),)


class Hardsigmoid(_Elementwise):
    """relu6(x + 3) / 6."""

    _function, _arguments = "hardsigmoid", (("inplace", False),)


class Hardtanh(_Elementwise):
    """x clamped to [min_val, max_val]."""

    _function, _arguments = "hardtanh", (("min_val", -1.0), ("max_val", 1.0), ("inplace", False))


class ReLU6(_Elementwise):
    """min(max(x, 0), 6)."""

    _function, _arguments = "relu6", (("inplace", False),)


class LogSigmoid(_Elementwise):
    """log(sigmoid(x))."""

    _function = "logsigmoid"


class SELU(_Elementwise):
    """Scaled elu with the self-normalising constants."""

    _function, _arguments = "selu", (("inplace", False),)


class CELU(_Elementwise):
    """x for x > 0, else alpha * (exp(x / alpha) - 1)."""

    _function, _arguments = "celu", (("alpha", 1.0), ("inplace", False))


class Softsign(_Elementwise):
    """x / (1 + |x|)."""

    _function = "softsign"


class Softshrink(_Elementwise):
    """x moved lambd toward 0, 0 within lambd of it."""

    _function, _arguments = "softshrink", (("lambd", 0.5),)

    def extra_repr(self) -> str:
        return str(self.lambd)  # PyTorch's form


class Hardshrink(_Elementwise):
    """x, but 0 within lambd of 0."""

    _function, _arguments = "hardshrink", (("lambd", 0.5),)

    def extra_repr(self) -> str:
        return str(self.lambd)  # PyTorch's form


class Tanhshrink(_Elementwise):
    """x - tanh(x)."""

    _function = "tanhshrink"


class Threshold(_Elementwise):
    """x where x > threshold, else value."""

    _function, _arguments = "threshold", (("threshold", None), ("value", None), ("inplace", False))


class GLU(_Elementwise):
    """a * sigmoid(b), a and b the halves of the input along `dim`."""

    _function, _arguments = "glu", (("dim", -1),)


class Softmax(Module):
    """exp(x) / sum(exp(x)) along `dim`."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return functional.softmax(input, implicit_softmax_dim("Softmax", self.dim, input))

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along `dim`, computed stably."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return functional.log_softmax(input, implicit_softmax_dim("LogSoftmax", self.dim, input))

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


__all__ = ["ELU", "GELU", "LeakyReLU", "LogSoftmax", "MultiheadAttention", "ReLU", "Sigmoid", "Softmax", "Softplus", "Tanh"]


class Softmin(Module):
    """softmax(-x) along `dim`."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return functional.softmin(input, implicit_softmax_dim("Softmin", self.dim, input))

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """x for x > 0, else a learned slope times x: one slope, or `num_parameters` (one per channel),
    starting at `init`."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: object = None, dtype: object = None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(full((num_parameters,), init, dtype=dtype, device=device))

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return functional.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU (F.rrelu): a random negative slope in [lower, upper] per element while
    training, their mean in eval mode."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return functional.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")
