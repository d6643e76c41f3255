"""The functions of torch.special that numdiff computes with SciPy's Cephes routines on host values
(a device input makes the round trip): the Bessel functions J, Y and K of orders 0 and 1, Ai,
j0, and the regularized incomplete gamma functions P and Q. numdiff.special exports them.

>>> numdiff.special.gammainc(numdiff.tensor([1.0]), numdiff.tensor([1.0]))  # 1 - exp(-1)
tensor([0.6321])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._dtype import float32, float64, get_default_dtype, promote
from numdiff._lazy import lazy_module
from numdiff.autograd.function import Function
from numdiff.backend import like_host, to_host
from numdiff.ops._util import ensure_tensor
from numdiff.ops.composed_index import broadcast_tensors
from numdiff.ops.elementwise import PUBLIC
from numdiff.ops.search import _on_device_of
from numdiff.ops.special_functions import lgamma
from numdiff.tensor import Tensor

xlogy = PUBLIC["xlogy"]

_scipy_special = lazy_module("scipy.special")


def _bessel(name: str, compute: Any, formula: str) -> Any:
    """torch.special.<name>: `compute`, SciPy's Cephes routine, on the host values (a device input
    makes the round trip). PyTorch records no gradient for these functions, and neither does numdiff:
    the result is a new tensor that requires none."""

    def function(input: Tensor) -> Tensor:
        host = _float_host(f"special.{name}", ensure_tensor(f"special.{name}", input))
        # float32 comes back as float32: SciPy computes it in float64, then it is rounded once.
        values = np.asarray(compute(host.astype(np.float64))).astype(host.dtype)
        return Tensor._wrap(like_host(values, input._data), None, None)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"""{formula}, elementwise (no gradient, as PyTorch's).

    >>> numdiff.special.{name}(numdiff.tensor([1.0])).shape
    numdiff.Size([1])
    """
    return function


def _float_host(op: str, input: Tensor) -> np.ndarray:
    """`input`'s values as a float32 or float64 host array (integers become the default dtype)."""
    dtype = input.dtype if input.is_floating_point() else get_default_dtype()
    if input.is_complex() or dtype not in (float32, float64):
        raise TypeError(f"{op}: expects a float32, float64 or integer input, got dtype {input.dtype}")
    return to_host(input.detach().to(dtype)._data)


def _cephes(routine: str) -> Any:
    """SciPy's routine `routine` of one host array, looked up when first called (SciPy loads lazily)."""
    return lambda x: getattr(_scipy_special, routine)(x)


bessel_j0 = _bessel("bessel_j0", _cephes("j0"), "The Bessel function of the first kind of order 0, J0(x)")
bessel_j1 = _bessel("bessel_j1", _cephes("j1"), "The Bessel function of the first kind of order 1, J1(x)")
bessel_y0 = _bessel(
    "bessel_y0", _cephes("y0"), "The Bessel function of the second kind of order 0, Y0(x) (NaN below 0)"
)
bessel_y1 = _bessel(
    "bessel_y1", _cephes("y1"), "The Bessel function of the second kind of order 1, Y1(x) (NaN below 0)"
)
modified_bessel_k0 = _bessel(
    "modified_bessel_k0", _cephes("k0"), "The modified Bessel function K0(x) (NaN below 0)"
)
modified_bessel_k1 = _bessel(
    "modified_bessel_k1", _cephes("k1"), "The modified Bessel function K1(x) (NaN below 0)"
)
scaled_modified_bessel_k0 = _bessel("scaled_modified_bessel_k0", _cephes("k0e"), "exp(x) K0(x) (NaN below 0)")
scaled_modified_bessel_k1 = _bessel("scaled_modified_bessel_k1", _cephes("k1e"), "exp(x) K1(x) (NaN below 0)")
airy_ai = _bessel(
    "airy_ai", lambda x: _scipy_special.airy(x)[0], "The Airy function Ai(x) (NaN at +-inf, as PyTorch's)"
)
spherical_bessel_j0 = _bessel(
    "spherical_bessel_j0",
    lambda x: _scipy_special.spherical_jn(0, x),
    "The spherical Bessel function j0(x) = sin(x) / x",
)


class _RegularizedGamma(Function):
    """P(a, x) (`upper` False) or Q(a, x) = 1 - P(a, x) (`upper` True), SciPy's Cephes igam/igamc on
    the host values. The gradient in x is +-x^(a-1) e^-x / Gamma(a), composed of tensor ops so it
    differentiates again; in a it raises, as PyTorch's (no closed form: a series in a would be needed)."""

    @staticmethod
    def forward(ctx, a, x, upper):
        name = "gammaincc" if upper else "gammainc"
        compute = _scipy_special.gammaincc if upper else _scipy_special.gammainc
        a_host, x_host = _float_host(f"special.{name}", a), _float_host(f"special.{name}", x)
        a64, x64 = a_host.astype(np.float64), x_host.astype(np.float64)
        values = _torch_edges(np.asarray(compute(a64, x64)), a64, x64, upper)
        ctx.save_for_backward(a, x)
        ctx.function_name, ctx.upper = name, upper
        return _on_device_of(values.astype(a_host.dtype), x)

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(
                f"special.{ctx.function_name}: the derivative in its first argument (input, the shape a) "
                "is not implemented, as in PyTorch; detach it (only other, x, can be differentiated)"
            )
        if not ctx.needs_input_grad[1]:
            return None, None, None
        density = (xlogy(a - 1.0, x) - x - lgamma(a)).exp()
        return None, (-grad if ctx.upper else grad) * density, None


def _torch_edges(values: np.ndarray, a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """PyTorch decides x = 0, then an infinite a, then an infinite x before looking at a NaN
    argument, where Cephes answers NaN: P(NaN, 0) = 0, P(NaN, inf) = 1, P(inf, NaN) = 0."""
    a_nan, x_nan = np.isnan(a), np.isnan(x)
    lower = np.where(a_nan & (x == 0), 0.0, np.where(a_nan & (x == np.inf), 1.0, np.nan))
    lower = np.where((a == np.inf) & x_nan, 0.0, lower)
    decided = ~np.isnan(lower)
    if not decided.any():
        return values
    return np.where(decided, 1.0 - lower if upper else lower, values)


def _regularized_gamma(name: str, input: Any, other: Any, upper: bool) -> Tensor:
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        raise TypeError(
            f"special.{name}: input and other must be Tensors, got {type(input).__name__} "
            f"and {type(other).__name__}"
        )
    for label, t in (("input", input), ("other", other)):
        if not t.is_floating_point():
            raise TypeError(
                f"special.{name}: {label} must be a float32 or float64 tensor, got dtype {t.dtype}"
            )
    if input.dtype != other.dtype:
        dtype = promote(input.dtype, other.dtype)
        input, other = input.to(dtype), other.to(dtype)
    a, x = broadcast_tensors(input, other)
    return _RegularizedGamma.apply(a, x, upper)


def gammainc(input: Tensor, other: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(a, x) of a = `input` and x = `other`
    (NaN for a < 0 or x < 0, as torch.special.gammainc). Differentiable in x only, as PyTorch's.

    >>> numdiff.special.gammainc(numdiff.tensor([1.0]), numdiff.tensor([1.0]))  # 1 - exp(-1)
    tensor([0.6321])
    """
    return _regularized_gamma("gammainc", input, other, upper=False)


def gammaincc(input: Tensor, other: Tensor) -> Tensor:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), computed directly (so
    accurate where it is tiny). Differentiable in x only, as PyTorch's.

    >>> numdiff.special.gammaincc(numdiff.tensor([1.0]), numdiff.tensor([1.0]))  # exp(-1)
    tensor([0.3679])
    """
    return _regularized_gamma("gammaincc", input, other, upper=True)
