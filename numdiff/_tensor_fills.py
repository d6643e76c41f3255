"""Tensor methods that fill a tensor in place: the random fills PyTorch programs use
(``exponential_``, ``cauchy_``, ``log_normal_``, ``geometric_``, ``random_``), ``fill_diagonal_``, and
the legacy constructor ``new``. `METHODS` joins the Tensor class (numdiff._tensor_methods.attach)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numdiff import _dtype, _inplace, creation
from numdiff._ground.args import is_int
from numdiff.autograd.grad_mode import no_grad
from numdiff.ops import arithmetic, indexing, shape
from numdiff.ops.elementwise import PUBLIC as RULES
from numdiff.tensor import Size, Tensor


# In-place random fills: each draws in float64 from the (given or default) generator, then casts.
def _fill_with(op: str, draw) -> Any:
    def method(self: Tensor, *args: Any, generator: Any = None, **kwargs: Any) -> Tensor:
        def compute(old: Tensor) -> Tensor:
            with no_grad():
                uniform = creation.rand(*old.shape, generator=generator, dtype=_dtype.float64, device=old.device)
                return draw(op, uniform, old, *args, **kwargs).to(old.dtype)

        return _inplace.apply_inplace(self, op, compute)

    method.__name__ = method.__qualname__ = op
    return method


def _positive(op: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{op}: {name} must be a positive number, got {value!r}")
    return float(value)


def _exponential(op: str, u: Tensor, old: Tensor, lambd: float = 1.0) -> Tensor:
    _floating_target(op, old)
    return arithmetic.div(arithmetic.neg(RULES["log1p"](arithmetic.neg(u))), _positive(op, "lambd", lambd))


def _cauchy(op: str, u: Tensor, old: Tensor, median: float = 0.0, sigma: float = 1.0) -> Tensor:
    _floating_target(op, old)
    return arithmetic.add(arithmetic.mul(RULES["tan"](arithmetic.mul(arithmetic.sub(u, 0.5), math.pi)), _positive(op, "sigma", sigma)), median)


def _log_normal(op: str, u: Tensor, old: Tensor, mean: float = 1.0, std: float = 2.0) -> Tensor:
    _floating_target(op, old)
    normal = creation.randn(*old.shape, dtype=_dtype.float64, device=old.device)
    return RULES["exp"](arithmetic.add(arithmetic.mul(normal, _positive(op, "std", std)), mean))


def _geometric(op: str, u: Tensor, old: Tensor, p: float) -> Tensor:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
        raise ValueError(f"{op}: p must be in (0, 1), got {p!r}")
    return RULES["ceil"](arithmetic.div(RULES["log1p"](arithmetic.neg(u)), math.log1p(-p)))


def _random_integers(op: str, u: Tensor, old: Tensor, low: Any = None, high: Any = None) -> Tensor:
    if low is not None and high is None:
        low, high = 0, low
    low = 0 if low is None else low
    if high is None:
        high = 2 ** (np.finfo(old._data.dtype).nmant + 1) if old.is_floating_point() else (
            2 if old.dtype is _dtype.bool_ else int(np.iinfo(old._data.dtype).max) + 1)
    if not is_int(low) or not is_int(high) or high <= low:
        raise ValueError(f"{op}: expected integers from < to, got from={low!r}, to={high!r}")
    return creation.randint(int(low), int(high), tuple(old.shape), dtype=_dtype.int64, device=old.device)


def _floating_target(op: str, old: Tensor) -> None:
    if not old.is_floating_point():
        raise TypeError(f"{op}: expected a floating point tensor, got {old.dtype}")


def fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Write `fill_value` on the main diagonal in place (every dimension of equal size beyond 2-D;
    a tall matrix restarts its diagonal every columns + 1 rows with `wrap`)."""
    if self.ndim < 2:
        raise ValueError(f"fill_diagonal_: the tensor must be at least 2-D, got shape {tuple(self.shape)}")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise ValueError(f"fill_diagonal_: every dimension must have the same size beyond 2-D, got {tuple(self.shape)}")
    dims = tuple(self.shape)
    step = 1 + int(np.sum(np.cumprod(dims[::-1])[:-1]))
    end = dims[1] * dims[1] if self.ndim == 2 and not wrap else int(np.prod(dims))
    positions = creation.tensor(np.arange(0, min(end, int(np.prod(dims))), step, dtype=np.int64), device=self.device)

    def compute(old: Tensor) -> Tensor:
        flat = indexing.index_put(shape.reshape(old, (-1,)), (positions,), fill_value)
        return shape.reshape(flat, dims)

    return _inplace.apply_inplace(self, "fill_diagonal_", compute)


def new(self: Tensor, *args: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """The legacy constructor: ``x.new()`` empty, ``x.new(2, 3)`` uninitialised of that size, or
    ``x.new(data)`` a copy of data, with this tensor's dtype and device."""
    dtype, device = dtype or self.dtype, device or self.device
    if not args:
        return creation.empty(0, dtype=dtype, device=device)
    if all(is_int(a) for a in args):
        return creation.empty(tuple(int(a) for a in args), dtype=dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Size):
        return creation.empty(tuple(args[0]), dtype=dtype, device=device)
    if len(args) == 1:
        return creation.tensor(args[0].detach() if isinstance(args[0], Tensor) else args[0], dtype=dtype, device=device)
    raise TypeError(f"new: expected sizes or one sequence of data, got {args!r}")


METHODS = {
    "exponential_": _fill_with("exponential_", _exponential),
    "cauchy_": _fill_with("cauchy_", _cauchy),
    "log_normal_": _fill_with("log_normal_", _log_normal),
    "geometric_": _fill_with("geometric_", _geometric),
    "random_": _fill_with("random_", _random_integers),
    "fill_diagonal_": fill_diagonal_,
    "new": new,
}
