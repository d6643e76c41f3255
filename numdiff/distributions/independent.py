"""Independent: reinterpret the rightmost batch dimensions of a distribution as event dimensions,
so log_prob sums over them (a diagonal Gaussian over vectors is Independent(Normal(mu, sigma), 1))."""

from __future__ import annotations

from typing import Any

from numdiff.distributions import constraints
from numdiff.distributions.distribution import Distribution, delegated, sum_rightmost
from numdiff.tensor import Size, Tensor


class Independent(Distribution):
    """`base_distribution` with its last `reinterpreted_batch_ndims` batch dimensions moved into
    the event shape.

    >>> base = numdiff.distributions.Normal(numdiff.zeros(3), numdiff.ones(3))
    >>> numdiff.distributions.Independent(base, 1).log_prob(numdiff.zeros(3))
    tensor(-2.7568)
    """

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(
        self,
        base_distribution: Distribution,
        reinterpreted_batch_ndims: int,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError(
                f"reinterpreted_batch_ndims must be a non-negative int, got {reinterpreted_batch_ndims!r}"
            )
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise ValueError(
                "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                f"actual {reinterpreted_batch_ndims} vs {len(base_distribution.batch_shape)}"
            )
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dims = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(
            shape[: len(shape) - event_dims], shape[len(shape) - event_dims :], validate_args=validate_args
        )

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        base = self.base_dist.support
        return (
            base
            if self.reinterpreted_batch_ndims == 0
            else constraints.independent(base, self.reinterpreted_batch_ndims)
        )

    mean = delegated("base_dist", "mean")
    mode = delegated("base_dist", "mode")
    variance = delegated("base_dist", "variance")

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Independent:
        batch_shape = Size(batch_shape)
        base_batch = tuple(batch_shape) + tuple(self._event_shape[: self.reinterpreted_batch_ndims])
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.base_dist = self.base_dist.expand(base_batch)
        new._batch_shape = batch_shape
        return new

    def sample(self, sample_shape: Any = ()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
