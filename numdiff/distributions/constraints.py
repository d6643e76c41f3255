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


class CorrCholesky(LowerCholesky):
    """Cholesky factors of correlation matrices: lower Cholesky with rows of unit length (to
    10 eps times the size, PyTorch's tolerance)."""

    def check(self, value: Tensor) -> Tensor:
        tolerance = numdiff.finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = numdiff.linalg.norm(value.detach(), dim=-1)
        return super().check(value) & (row_norm - 1.0).abs().le(tolerance).all(dim=-1)


class Square(Constraint):
    """Square matrices (the last two dimensions equal)."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return numdiff.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1], dtype=numdiff.bool)


class Symmetric(Square):
    """Symmetric square matrices (equal to their transpose to PyTorch's isclose, atol 1e-6)."""

    def check(self, value: Tensor) -> Tensor:
        square = super().check(value)
        if not bool(square.all()):
            return square
        return numdiff.isclose(value, value.mT, atol=1e-6).all(dim=-1).all(dim=-1)


class PositiveSemidefinite(Symmetric):
    """Symmetric matrices with no negative eigenvalue."""

    def check(self, value: Tensor) -> Tensor:
        # Per matrix: PyTorch answers with the symmetry check alone for a whole batch once one
        # matrix in it is not symmetric.
        symmetric = super().check(value)
        if not bool(symmetric.any()):
            return symmetric
        return symmetric & numdiff.linalg.eigvalsh(value.detach()).ge(0).all(dim=-1)


class Cat(Constraint):
    """`cseq[i]` on the i-th block of `lengths[i]` entries along `dim` (torch.cat's layout)."""

    def __init__(self, cseq: list[Constraint], dim: int = 0, lengths: list[int] | None = None) -> None:
        self.cseq = list(cseq)
        if not all(isinstance(c, Constraint) for c in self.cseq):
            raise TypeError(f"constraints.cat: every element of cseq must be a Constraint, got {self.cseq!r}")
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(
                f"constraints.cat: lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})"
            )
        self.dim = dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Tensor) -> Tensor:
        _check_dim("constraints.cat", self.dim, value)
        checks, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            checks.append(constraint.check(value.narrow(self.dim, start, length)))
            start += length
        return numdiff.cat(checks, self.dim)


class Stack(Constraint):
    """`cseq[i]` on the i-th slice along `dim` (torch.stack's layout)."""

    def __init__(self, cseq: list[Constraint], dim: int = 0) -> None:
        self.cseq = list(cseq)
        if not all(isinstance(c, Constraint) for c in self.cseq):
            raise TypeError(
                f"constraints.stack: every element of cseq must be a Constraint, got {self.cseq!r}"
            )
        self.dim = dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        event_dim = max(c.event_dim for c in self.cseq)
        # A negative dim inside the event makes the stacked dimension part of it.
        return event_dim + 1 if self.dim + event_dim < 0 else event_dim

    def check(self, value: Tensor) -> Tensor:
        _check_dim("constraints.stack", self.dim, value)
        slices = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return numdiff.stack([c.check(v) for v, c in zip(slices, self.cseq)], self.dim)


def _check_dim(op: str, dim: int, value: Tensor) -> None:
    if not -value.dim() <= dim < value.dim():
        raise IndexError(f"{op}: dim {dim} is out of range for a value with {value.dim()} dimensions")


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
positive_semidefinite = PositiveSemidefinite()
corr_cholesky = CorrCholesky()
square = Square()
symmetric = Symmetric()
cat = Cat
stack = Stack
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
    "cat",
    "corr_cholesky",
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
    "positive_semidefinite",
    "real",
    "real_vector",
    "simplex",
    "square",
    "stack",
    "symmetric",
    "unit_interval",
]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
