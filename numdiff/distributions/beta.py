"""Distributions on the simplex and the unit interval: Dirichlet and Beta (a two-entry Dirichlet).

`rsample` normalises independent standard gamma draws, g_i / sum_j g_j, each differentiable in its
concentration through the implicit gamma derivative (numdiff.distributions.gamma), so gradients
reach the concentrations through both the draws and the normalisation.
"""

from __future__ import annotations

from numbers import Number
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.distribution import Distribution, broadcast_all
from numdiff.distributions.gamma import standard_gamma
from numdiff.tensor import Size, Tensor


def _simplex_clamp(draws: Tensor) -> Tensor:
    """Draws kept inside the open simplex's float range, as PyTorch's sampler returns them."""
    info = numdiff.finfo(draws.dtype)
    return draws.clamp(min=info.tiny, max=1 - info.eps)


class Dirichlet(Distribution):
    """Dirichlet over the simplex of the last dimension of `concentration` (all entries > 0).

    >>> d = numdiff.distributions.Dirichlet(numdiff.tensor([1.0, 1.0, 1.0]))
    >>> d.log_prob(numdiff.tensor([0.2, 0.3, 0.5]))
    tensor(0.6931)
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if not isinstance(concentration, Tensor):
            raise ValueError(
                f"Dirichlet: `concentration` must be a numdiff.Tensor, got {type(concentration).__name__}"
            )
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        shifted = (self.concentration - 1).clamp(min=0.0)
        total = shifted.sum(-1, keepdim=True)
        mode = shifted / numdiff.where(total > 0, total, 1.0)
        # Where every concentration is below one the density is unbounded at every corner; PyTorch
        # reports the first corner there (the argmax of its all-NaN row).
        below = (self.concentration < 1).all(dim=-1, keepdim=True)
        corner = numdiff.zeros_like(mode)
        corner[..., 0] = 1.0
        return numdiff.where(below, corner, mode)

    @property
    def variance(self) -> Tensor:
        total = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (total - self.concentration) / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        gammas = standard_gamma(self.concentration.expand(shape))
        return _simplex_clamp(gammas / gammas.sum(-1, keepdim=True))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        alpha = self.concentration
        return (
            numdiff.xlogy(alpha - 1.0, value).sum(-1)
            + numdiff.lgamma(alpha.sum(-1))
            - numdiff.lgamma(alpha).sum(-1)
        )

    def entropy(self) -> Tensor:
        alpha = self.concentration
        k = alpha.shape[-1]
        total = alpha.sum(-1)
        return (
            numdiff.lgamma(alpha).sum(-1)
            - numdiff.lgamma(total)
            - (k - total) * numdiff.digamma(total)
            - ((alpha - 1.0) * numdiff.digamma(alpha)).sum(-1)
        )


class Beta(Distribution):
    """Beta on [0, 1] with concentrations `concentration1` (alpha) and `concentration0` (beta).

    >>> numdiff.distributions.Beta(2.0, 3.0).mean
    tensor(0.4000)
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self,
        concentration1: Tensor | float,
        concentration0: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        if isinstance(concentration1, Number) and isinstance(concentration0, Number):
            pair = numdiff.tensor(
                [float(concentration1), float(concentration0)], dtype=numdiff.get_default_dtype()
            )
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            pair = numdiff.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(pair, validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Beta:
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        new._batch_shape = Size(batch_shape)
        return new

    @property
    def concentration1(self) -> Tensor:
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(numdiff.stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()
