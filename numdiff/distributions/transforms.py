"""Transforms between constrained and unconstrained spaces, PyTorch's torch.distributions.transforms.

A Transform maps x to y = t(x); `t.inv` maps back, and `log_abs_det_jacobian(x, y)` is log |dy/dx|
(summed over the transform's own event dimensions). TransformedDistribution scores a value by
inverting each transform and subtracting its log-Jacobian; the squashed Gaussian of SAC is
`TransformedDistribution(Normal(mu, sigma), [TanhTransform()])`. Each is a composition of numdiff's
differentiable ops, so gradients reach the parameters of both the transform and the base.

    >>> t = ExpTransform()
    >>> t.inv(t(numdiff.tensor([0.5])))
    tensor([0.5000])

`cache_size=1` keeps the last (x, y) pair, so `t.inv(t(x))` returns x itself (not a recomputation):
what SAC needs to score its own tanh-squashed draws without atanh's rounding near +-1.
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.distribution import _broadcast_shapes, broadcast_all, sum_rightmost
from numdiff.distributions.structured_transforms import (
    CatTransform,
    CorrCholeskyTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    ReshapeTransform,
    StackTransform,
)
from numdiff.distributions.transform_base import (
    ComposeTransform,
    IndependentTransform,
    Transform,
    identity_transform,
)
from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.tensor import Size, Tensor


def _clipped_sigmoid(x: Tensor) -> Tensor:
    """sigmoid(x) kept inside (0, 1), so that its inverse and logarithms stay finite."""
    info = numdiff.finfo(x.dtype)
    return x.sigmoid().clamp(min=info.tiny, max=1.0 - info.eps)


class _Pointwise(Transform):
    """A monotone increasing elementwise bijection of the real line or part of it."""

    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    __hash__ = object.__hash__


class ExpTransform(_Pointwise):
    """y = exp(x)."""

    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class SigmoidTransform(_Pointwise):
    """y = sigmoid(x), clipped into (0, 1)."""

    codomain = constraints.unit_interval

    def _call(self, x: Tensor) -> Tensor:
        return _clipped_sigmoid(x)

    def _inverse(self, y: Tensor) -> Tensor:
        info = numdiff.finfo(y.dtype)
        y = y.clamp(min=info.tiny, max=1.0 - info.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -functional.softplus(-x) - functional.softplus(x)


class SoftplusTransform(_Pointwise):
    """y = log(1 + exp(x))."""

    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return functional.softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -functional.softplus(-x)


class TanhTransform(_Pointwise):
    """y = tanh(x); log |dy/dx| = 2 (log 2 - x - softplus(-2x)), finite for large |x| (SAC's
    squashed Gaussian)."""

    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return numdiff.atanh(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - functional.softplus(-2.0 * x))


class AbsTransform(Transform):
    """y = |x| (not bijective: the inverse picks the non-negative root)."""

    codomain = constraints.positive

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class PowerTransform(Transform):
    """y = x ** exponent on the positive half-line."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Tensor | float, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self) -> Tensor:
        return self.exponent.sign()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape: Any) -> Size:
        return Size(_broadcast_shapes(tuple(shape), tuple(self.exponent.shape)))

    inverse_shape = forward_shape


class AffineTransform(Transform):
    """y = loc + scale * x; `event_dim` dimensions on the right form one event, over which the
    log-Jacobian is summed."""

    bijective = True

    def __init__(
        self, loc: Tensor | float, scale: Tensor | float, event_dim: int = 0, cache_size: int = 0
    ) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return (
            constraints.real
            if self._event_dim == 0
            else constraints.independent(constraints.real, self._event_dim)
        )

    codomain = domain

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        return _equal(self.loc, other.loc) and _equal(self.scale, other.scale)

    __hash__ = object.__hash__

    @property
    def sign(self) -> int | Tensor:
        if isinstance(self.scale, Number):
            return 1 if self.scale > 0 else -1 if self.scale < 0 else 0
        return self.scale.sign()

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shape = tuple(x.shape)
        if isinstance(self.scale, Number):
            result = numdiff.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self._event_dim:
            result = sum_rightmost(result, self._event_dim)
            shape = shape[: len(shape) - self._event_dim]
        return result.expand(shape)

    def forward_shape(self, shape: Any) -> Size:
        return Size(_broadcast_shapes(tuple(shape), _shape_of(self.loc), _shape_of(self.scale)))

    inverse_shape = forward_shape


def _shape_of(value: Any) -> tuple[int, ...]:
    return tuple(value.shape) if isinstance(value, Tensor) else ()


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, Number) and isinstance(b, Number):
        return a == b
    return bool((a == b).all())


class _SimplexTransform(Transform):
    """Maps onto the probability simplex along the last dimension."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    __hash__ = object.__hash__


class SoftmaxTransform(_SimplexTransform):
    """y = exp(x) / sum(exp(x)) along the last dimension (not bijective: the inverse is log y,
    one of the preimages)."""

    def _call(self, x: Tensor) -> Tensor:
        return x.softmax(-1)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def forward_shape(self, shape: Any) -> Size:
        _at_least_one_dim(shape)
        return shape

    inverse_shape = forward_shape


class StickBreakingTransform(_SimplexTransform):
    """K - 1 unconstrained reals to a K-entry simplex vector by stick breaking: entry i takes the
    fraction sigmoid(x_i - log(K - 1 - i)) of what is left, and the last entry the remainder
    (x = 0 maps to the uniform vector). Bijective."""

    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)
        z = _clipped_sigmoid(x - offset.log())
        remaining = (1 - z).cumprod(-1)
        return functional.pad(z, [0, 1], value=1.0) * functional.pad(remaining, [1, 0], value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        head = y[..., :-1]
        offset = y.shape[-1] - y.new_ones(head.shape[-1]).cumsum(-1)
        # What is left of the stick before each entry; rounding can make it 0 or negative when
        # the last entry is ~0, so it is kept at the smallest positive value.
        left = (1 - head.cumsum(-1)).clamp(min=numdiff.finfo(y.dtype).tiny)
        return head.log() - left.log() + offset.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)
        shifted = x - offset.log()
        # log(1 - sigmoid(s)) = -s + log(sigmoid(s)), stable for large s.
        return (-shifted + functional.logsigmoid(shifted) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: Any) -> Size:
        _at_least_one_dim(shape)
        return Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape: Any) -> Size:
        _at_least_one_dim(shape)
        return Size(tuple(shape[:-1]) + (shape[-1] - 1,))


def _at_least_one_dim(shape: Any) -> None:
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")


__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]
