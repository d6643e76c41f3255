"""LowRankMultivariateNormal: a Gaussian over vectors whose covariance is a low-rank factor plus a
diagonal, ``cov_factor @ cov_factor.mT + diag(cov_diag)``. Everything is computed through the
small (rank x rank) capacitance matrix ``I + W^T D^-1 W`` (the Woodbury identity and the matrix
determinant lemma), so a d-dimensional density costs O(d rank^2), not O(d^3)."""

from __future__ import annotations

import math
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.distribution import Distribution, _broadcast_shapes, noise
from numdiff.distributions.multivariate import _describe
from numdiff.tensor import Size, Tensor


class LowRankMultivariateNormal(Distribution):
    """Gaussian with mean `loc` (batch + (d,)) and covariance ``W W^T + diag(D)`` for `cov_factor`
    W (batch + (d, rank)) and `cov_diag` D (batch + (d,), positive); batch shapes broadcast.

    >>> d = numdiff.distributions.LowRankMultivariateNormal(numdiff.zeros(2), numdiff.zeros(2, 1), numdiff.ones(2))
    >>> d.log_prob(numdiff.zeros(2))
    tensor(-1.8379)
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor, validate_args: bool | None = None) -> None:
        if not isinstance(loc, Tensor) or loc.dim() < 1:
            raise ValueError(f"LowRankMultivariateNormal: loc must be at least one-dimensional, got {_describe(loc)}")
        d = loc.shape[-1]
        if not isinstance(cov_factor, Tensor) or cov_factor.dim() < 2 or cov_factor.shape[-2] != d:
            raise ValueError(
                f"LowRankMultivariateNormal: cov_factor must be a batch of {d} x rank matrices (loc has {d} "
                f"dimensions), got {_describe(cov_factor)}"
            )
        if not isinstance(cov_diag, Tensor) or cov_diag.dim() < 1 or cov_diag.shape[-1] != d:
            raise ValueError(
                f"LowRankMultivariateNormal: cov_diag must be a batch of vectors of {d} entries, got {_describe(cov_diag)}"
            )
        batch_shape = Size(_broadcast_shapes(tuple(loc.shape[:-1]), tuple(cov_factor.shape[:-2]), tuple(cov_diag.shape[:-1])))
        event = (d,)
        rank = cov_factor.shape[-1]
        self.loc = loc.expand(tuple(batch_shape) + event)
        self.cov_factor = cov_factor.expand(tuple(batch_shape) + (d, rank))
        self.cov_diag = cov_diag.expand(tuple(batch_shape) + event)
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        super().__init__(batch_shape, event, validate_args=validate_args)
        # W^T D^-1 and the Cholesky factor of the capacitance I + W^T D^-1 W.
        self._wt_dinv = cov_factor.mT / cov_diag.unsqueeze(-2)
        capacitance = self._wt_dinv @ cov_factor + numdiff.eye(rank, dtype=cov_factor.dtype, device=cov_factor.device)
        self._capacitance_tril = numdiff.linalg.cholesky(capacitance)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        w, diag = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (w.pow(2).sum(-1) + diag).expand(self._extended_shape())

    def _square(self) -> tuple[int, ...]:
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def covariance_matrix(self) -> Tensor:
        w = self._unbroadcasted_cov_factor
        return (w @ w.mT + numdiff.diag_embed(self._unbroadcasted_cov_diag)).expand(self._square())

    @property
    def precision_matrix(self) -> Tensor:
        # Woodbury: D^-1 - D^-1 W C^-1 W^T D^-1, with C = L L^T the capacitance.
        a = numdiff.linalg.solve_triangular(self._capacitance_tril, self._wt_dinv, upper=False)
        return (numdiff.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - a.mT @ a).expand(self._square())

    @property
    def scale_tril(self) -> Tensor:
        # cov = sqrt(D) (I + K) sqrt(D) with K = D^-1/2 W W^T D^-1/2, so its factor is sqrt(D) chol(I + K).
        root = self._unbroadcasted_cov_diag.sqrt()
        scaled = self._unbroadcasted_cov_factor / root.unsqueeze(-1)
        identity = numdiff.eye(root.shape[-1], dtype=root.dtype, device=root.device)
        return (root.unsqueeze(-1) * numdiff.linalg.cholesky(identity + scaled @ scaled.mT)).expand(self._square())

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        eps_w = noise("normal", shape[:-1] + (self.cov_factor.shape[-1],), self.loc)
        eps_d = noise("normal", shape, self.loc)
        low_rank = (self._unbroadcasted_cov_factor @ eps_w.unsqueeze(-1)).squeeze(-1)
        return self.loc + low_rank + self._unbroadcasted_cov_diag.sqrt() * eps_d

    def _log_det(self) -> Tensor:
        # The matrix determinant lemma: log|W W^T + D| = log|C| + log|D|.
        return 2 * self._capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + self._unbroadcasted_cov_diag.log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        # Mahalanobis distance by Woodbury: x^T D^-1 x - |L^-1 W^T D^-1 x|^2.
        projected = (self._wt_dinv @ diff.unsqueeze(-1)).squeeze(-1)
        tril = self._capacitance_tril
        shape = _broadcast_shapes(tuple(tril.shape[:-2]), tuple(projected.shape[:-1]))
        tril = tril.expand(tuple(shape) + tuple(tril.shape[-2:]))
        projected = projected.expand(tuple(shape) + tuple(projected.shape[-1:]))
        whitened = numdiff.linalg.solve_triangular(tril, projected.unsqueeze(-1), upper=False).squeeze(-1)
        mahalanobis = (diff.pow(2) / self._unbroadcasted_cov_diag).sum(-1) - whitened.pow(2).sum(-1)
        d = self._event_shape[0]
        return -0.5 * (d * math.log(2 * math.pi) + self._log_det() + mahalanobis)

    def entropy(self) -> Tensor:
        d = self._event_shape[0]
        entropy = 0.5 * (d * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return entropy.expand(self._batch_shape) if len(self._batch_shape) else entropy

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> LowRankMultivariateNormal:
        batch_shape = tuple(Size(batch_shape))
        d, rank = self.cov_factor.shape[-2:]
        return type(self)(
            self.loc.expand(batch_shape + (d,)), self.cov_factor.expand(batch_shape + (d, rank)),
            self.cov_diag.expand(batch_shape + (d,)), validate_args=False,
        )  # fmt: skip

    def __repr__(self) -> str:
        return f"{type(self).__name__}(loc: {self.loc.size()}, cov_factor: {self.cov_factor.size()}, cov_diag: {self.cov_diag.size()})"

