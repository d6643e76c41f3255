"""MultivariateNormal: a Gaussian over vectors with a full covariance, parameterised by exactly one
of covariance_matrix, precision_matrix or scale_tril (the Cholesky factor everything is computed
from). PPO's continuous policies write MultivariateNormal(mean, torch.diag_embed(var))."""

from __future__ import annotations

import math
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.distribution import Distribution, _broadcast_shapes, noise
from numdiff.tensor import Size, Tensor


class MultivariateNormal(Distribution):
    """Gaussian with mean `loc` (batch + (d,)) and one of `covariance_matrix`, `precision_matrix`
    or `scale_tril` (batch + (d, d)); batch shapes broadcast.

    >>> d = numdiff.distributions.MultivariateNormal(numdiff.zeros(2), numdiff.eye(2))
    >>> d.log_prob(numdiff.zeros(2))
    tensor(-1.8379)
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError(
                "MultivariateNormal: exactly one of covariance_matrix, precision_matrix or scale_tril "
                f"must be given, got {len(given)}"
            )
        if not isinstance(loc, Tensor) or loc.dim() < 1:
            raise ValueError(f"MultivariateNormal: loc must be at least one-dimensional, got {_describe(loc)}")
        matrix = given[0]
        if not isinstance(matrix, Tensor) or matrix.dim() < 2 or matrix.shape[-1] != matrix.shape[-2]:
            raise ValueError(
                "MultivariateNormal: the covariance_matrix, precision_matrix or scale_tril must be a batch of "
                f"square matrices (at least two-dimensional), got {_describe(matrix)}"
            )
        if matrix.shape[-1] != loc.shape[-1]:
            raise ValueError(
                f"MultivariateNormal: loc has {loc.shape[-1]} dimensions but the matrix is "
                f"{matrix.shape[-2]} x {matrix.shape[-1]}"
            )
        batch_shape = Size(_broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        event = tuple(loc.shape[-1:])
        self.loc = loc.expand(tuple(batch_shape) + event)
        square = tuple(batch_shape) + event + event
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(square)
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(square)
        else:
            self.precision_matrix = precision_matrix.expand(square)
        super().__init__(batch_shape, event, validate_args=validate_args)  # validates the given matrix
        if covariance_matrix is not None:
            self._unbroadcasted_scale_tril = numdiff.linalg.cholesky(covariance_matrix)
        elif precision_matrix is not None:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def __getattr__(self, name: str) -> Any:
        # The two matrices not given are derived from scale_tril when first read, as in PyTorch.
        if name in ("scale_tril", "covariance_matrix", "precision_matrix") and "_unbroadcasted_scale_tril" in self.__dict__:
            tril = self._unbroadcasted_scale_tril
            square = tuple(self._batch_shape) + tuple(self._event_shape) * 2
            if name == "scale_tril":
                return tril.expand(square)
            if name == "covariance_matrix":
                return (tril @ tril.mT).expand(square)
            identity = numdiff.eye(tril.shape[-1], dtype=tril.dtype, device=tril.device)
            inverse = numdiff.linalg.solve_triangular(tril, identity, upper=False)  # L^-1
            return (inverse.mT @ inverse).expand(square)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = noise("normal", self._extended_shape(sample_shape), self.loc)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        tril = self._unbroadcasted_scale_tril
        shape = _broadcast_shapes(tuple(tril.shape[:-2]), tuple(diff.shape[:-1]))
        tril = tril.expand(tuple(shape) + tuple(tril.shape[-2:]))
        diff = diff.expand(tuple(shape) + tuple(diff.shape[-1:]))
        # M = |L^-1 (x - mu)|^2, the squared Mahalanobis distance.
        whitened = numdiff.linalg.solve_triangular(tril, diff.unsqueeze(-1), upper=False).squeeze(-1)
        d = self._event_shape[0]
        return -0.5 * (d * math.log(2 * math.pi) + whitened.pow(2).sum(-1)) - self._half_log_det()

    def entropy(self) -> Tensor:
        d = self._event_shape[0]
        entropy = 0.5 * d * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return entropy.expand(self._batch_shape) if len(self._batch_shape) else entropy

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> MultivariateNormal:
        batch_shape = Size(batch_shape)
        new = type(self).__new__(type(self))
        new.__dict__.update({k: v for k, v in self.__dict__.items() if k not in self.arg_constraints})
        event = tuple(self._event_shape)
        new.loc = self.loc.expand(tuple(batch_shape) + event)
        new._batch_shape = batch_shape
        return new

    def __repr__(self) -> str:
        # The matrix given (validation's error message shows it before the others are derived).
        for name in ("covariance_matrix", "precision_matrix"):
            if name in self.__dict__:
                return f"{type(self).__name__}(loc: {self.loc.size()}, {name}: {self.__dict__[name].size()})"
        return f"{type(self).__name__}(loc: {self.loc.size()}, scale_tril: {self._unbroadcasted_scale_tril.size()})"


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The Cholesky factor of precision^-1, from the flipped Cholesky factor of the precision."""
    flipped = numdiff.linalg.cholesky(precision.flip((-2, -1))).flip((-2, -1))
    identity = numdiff.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return numdiff.linalg.solve_triangular(flipped.mT, identity, upper=False)


def _describe(value: Any) -> str:
    return f"shape {tuple(value.shape)}" if isinstance(value, Tensor) else type(value).__name__
