"""biject_to and transform_to: from a constraint to a transform that maps the unconstrained reals
onto it, so a parameter can be optimised freely and read through the transform.

    >>> t = transform_to(constraints.positive)
    >>> t(numdiff.tensor([0.0]))
    tensor([1.])

`biject_to(c)` is a bijection (fit for HMC, whose densities need the inverse and log-Jacobian);
`transform_to(c)` may be a cheaper pseudo-inverse (the simplex gets softmax instead of stick
breaking). Both dispatch on the constraint's class; `register` adds one.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Number
from typing import Any

from numdiff.distributions import constraints
from numdiff.distributions.transforms import (
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    SigmoidTransform,
    SoftmaxTransform,
    StackTransform,
    StickBreakingTransform,
    Transform,
)

Factory = Callable[[constraints.Constraint], Transform]


class ConstraintRegistry:
    """A table from constraint classes to functions that build a transform for an instance."""

    def __init__(self) -> None:
        self._registry: dict[type, Factory] = {}

    def register(self, constraint: type | constraints.Constraint, factory: Factory | None = None) -> Any:
        """Register `factory(constraint) -> Transform` for a constraint class (or an instance's
        class); usable as a decorator when `factory` is left out."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not (isinstance(constraint, type) and issubclass(constraint, constraints.Constraint)):
            raise TypeError(
                f"Expected constraint to be either a Constraint subclass or instance, but got {constraint}"
            )
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: constraints.Constraint) -> Transform:
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _identity(constraint: constraints.Constraint) -> Transform:
    return ComposeTransform([])


def _independent_bijection(constraint: constraints.IndependentConstraint) -> Transform:
    inner = biject_to(constraint.base_constraint)
    return IndependentTransform(inner, constraint.reinterpreted_batch_ndims)


def _independent_transform(constraint: constraints.IndependentConstraint) -> Transform:
    inner = transform_to(constraint.base_constraint)
    return IndependentTransform(inner, constraint.reinterpreted_batch_ndims)


def _above(constraint: constraints.GreaterThan) -> Transform:
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.lower_bound, 1)])


def _below(constraint: constraints.LessThan) -> Transform:
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.upper_bound, -1)])


def _between(constraint: constraints.Interval) -> Transform:
    low, high = constraint.lower_bound, constraint.upper_bound
    if isinstance(low, Number) and isinstance(high, Number) and low == 0 and high == 1:
        return SigmoidTransform()
    return ComposeTransform([SigmoidTransform(), AffineTransform(low, high - low)])


for _registry, _independent in ((biject_to, _independent_bijection), (transform_to, _independent_transform)):
    _registry.register(constraints.Real, _identity)
    _registry.register(constraints.IndependentConstraint, _independent)
    _registry.register(constraints.GreaterThan, _above)
    _registry.register(constraints.GreaterThanEq, _above)
    _registry.register(constraints.LessThan, _below)
    _registry.register(constraints.Interval, _between)
    _registry.register(constraints.HalfOpenInterval, _between)
biject_to.register(constraints.Simplex, lambda constraint: StickBreakingTransform())
transform_to.register(constraints.Simplex, lambda constraint: SoftmaxTransform())
# Only transform_to for these two, as in PyTorch: LowerCholeskyTransform drops the upper triangle.
transform_to.register(constraints.LowerCholesky, lambda constraint: LowerCholeskyTransform())
for _kind in (constraints.PositiveDefinite, constraints.PositiveSemidefinite):
    transform_to.register(_kind, lambda constraint: PositiveDefiniteTransform())
for _registry in (biject_to, transform_to):
    _registry.register(constraints.CorrCholesky, lambda constraint: CorrCholeskyTransform())
    # Each block or slice gets its own constraint's transform from the same registry.
    _registry.register(
        constraints.Cat,
        lambda constraint, _r=_registry: CatTransform(
            [_r(c) for c in constraint.cseq], constraint.dim, constraint.lengths
        ),
    )
    _registry.register(
        constraints.Stack,
        lambda constraint, _r=_registry: StackTransform([_r(c) for c in constraint.cseq], constraint.dim),
    )
