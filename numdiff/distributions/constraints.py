"""The sets a distribution's parameters and samples live in, as small objects with a `check`.

`check(value)` returns a bool tensor: one entry per event (the trailing `event_dim` dimensions are
reduced with all). Distribution.__init__ checks parameters against `arg_constraints`, and
`log_prob` checks its value against `support`, when validation is on. The repr of each is the
one PyTorch prints, so error messages read the same.
"""

from __future__ import annotations

from typing import Any

import numdiff
from numdiff.tensor import Tensor


class Constraint:
    """A set of values; `check` says elementwise (per event) whether a tensor lies inside it."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement check")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Dependent(Constraint):
    """A constraint whose bounds depend on other parameters: never checked (PyTorch skips it too)."""

    def __init__(self, *, is_discrete: bool = False, event_dim: int = 0) -> None:
        self.is_discrete = is_discrete
        self.event_dim = event_dim

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Constraint) -> bool:
    return isinstance(constraint, Dependent)


class Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value  # False exactly at NaN


class Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class GreaterThan(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return value > self.lower_bound

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lower_bound={self.lower_bound})"


class GreaterThanEq(GreaterThan):
    def check(self, value: Tensor) -> Tensor:
        return value >= self.lower_bound


class LessThan(Constraint):
    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"{type(self).__name__}(upper_bound={self.upper_bound})"


class Interval(Constraint):
    """Closed interval [lower_bound, upper_bound]."""

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class HalfOpenInterval(Interval):
    """Half-open interval [lower_bound, upper_bound)."""

    def check(self, value: Tensor) -> Tensor:
        return (value >= self.lower_bound) & (value < self.upper_bound)


class IntegerGreaterThan(GreaterThan):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound)


class IntegerInterval(Interval):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)


class Simplex(Constraint):
    """Non-negative vectors summing to one (to 1e-6), along the last dimension."""

    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(dim=-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class Multinomial(Constraint):
    """Non-negative count vectors (last dimension) summing to at most `upper_bound`."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: int) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(dim=-1) & (value.sum(dim=-1) <= self.upper_bound)


class OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return ((value == 0) | (value == 1)).all(dim=-1) & (value.sum(-1) == 1)


class IndependentConstraint(Constraint):
    """`base` with its rightmost `reinterpreted_batch_ndims` dimensions treated as one event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value)
        for _ in range(self.reinterpreted_batch_ndims):
            result = result.all(dim=-1)
        return result

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class LowerCholesky(Constraint):
    """Lower-triangular square matrices with a positive diagonal (a Cholesky factor)."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        lower = (value.tril() == value).all(dim=-1).all(dim=-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(dim=-1)


class PositiveDefinite(Constraint):
    """Symmetric square matrices whose Cholesky factorisation succeeds."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        symmetric = (value - value.mT).abs().le(1e-6 * (1 + value.abs())).all(dim=-1).all(dim=-1)
        return symmetric & (numdiff.linalg.cholesky_ex(value.detach())[1] == 0)


dependent = Dependent()
real = Real()
boolean = Boolean()
positive = GreaterThan(0.0)
nonnegative = GreaterThanEq(0.0)
unit_interval = Interval(0.0, 1.0)
simplex = Simplex()
one_hot = OneHot()
real_vector = IndependentConstraint(real, 1)
lower_cholesky = LowerCholesky()
positive_definite = PositiveDefinite()
independent = IndependentConstraint
interval = Interval
integer_interval = IntegerInterval
half_open_interval = HalfOpenInterval
multinomial = Multinomial
nonnegative_integer = IntegerGreaterThan(0)
positive_integer = IntegerGreaterThan(1)
greater_than = GreaterThan
greater_than_eq = GreaterThanEq
less_than = LessThan

__all__ = [
    "Constraint",
    "boolean",
    "dependent",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "multinomial",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_integer",
    "positive_definite",
    "real",
    "real_vector",
    "simplex",
    "unit_interval",
]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
