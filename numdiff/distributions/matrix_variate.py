"""Distributions over matrices: LKJCholesky (Cholesky factors of correlation matrices, the LKJ
prior of Bayesian covariance models) and Wishart (positive definite matrices, the conjugate prior
of a Gaussian's precision).

LKJCholesky samples by the onion method (Lewandowski, Kurowicka and Joe 2009): row i is a uniform
direction scaled by the square root of a Beta draw. Wishart's rsample is Bartlett's
decomposition, L A A^T L^T with A lower triangular, chi draws on its diagonal (differentiable in
df through the implicit gamma derivative) and normal draws below it.
"""

from __future__ import annotations

import math
import warnings
from numbers import Number
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.beta import Beta
from numdiff.distributions.distribution import Distribution, _broadcast_shapes, broadcast_all
from numdiff.distributions.gamma import standard_gamma
from numdiff.distributions.multivariate import _precision_to_scale_tril
from numdiff.tensor import Size, Tensor

_LOG_2 = math.log(2.0)


class LKJCholesky(Distribution):
    """The LKJ distribution over `dim` x `dim` correlation matrices, on their lower Cholesky factors,
    with density proportional to det(L L^T)^(concentration - 1). No rsample, as in PyTorch.

    >>> d = numdiff.distributions.LKJCholesky(3, 0.5)
    >>> d.sample().shape
    numdiff.Size([3, 3])
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(
        self, dim: int, concentration: Tensor | float = 1.0, validate_args: bool | None = None
    ) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2:
            raise ValueError(
                f"LKJCholesky: expected dim to be an integer greater than or equal to 2, got dim={dim!r}"
            )
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        super().__init__(self.concentration.shape, (dim, dim), validate_args=validate_args)

    def _beta(self) -> Beta:
        """The Beta laws of the squared lengths of each row's part below the diagonal: row i's is
        Beta(i / 2, beta - (i - 1) / 2) with beta = concentration + (dim - 2) / 2 (Lewandowski,
        Kurowicka and Joe 2009, section 3.2; row 0's is never used). PyTorch gives row i >= 2 the
        first parameter i - 1/2, which skews its draws' correlations (a test pins the difference)."""
        rows = numdiff.arange(self.dim, dtype=self.concentration.dtype, device=self.concentration.device)
        beta = self.concentration.unsqueeze(-1) + 0.5 * (self.dim - 2)
        return Beta(rows.clamp(min=1) / 2, beta - 0.5 * (rows - 1).clamp(min=0))

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with numdiff.no_grad():
            y = self._beta().sample(sample_shape).unsqueeze(-1)
            directions = numdiff.randn(
                self._extended_shape(sample_shape), dtype=y.dtype, device=y.device
            ).tril(-1)
            norm = directions.norm(dim=-1, keepdim=True)
            # Row 0 has no entries below the diagonal: its direction is 0, not 0 / 0.
            unit = directions / numdiff.where(norm == 0, 1.0, norm)
            w = y.sqrt() * unit
            diagonal = (1 - w.pow(2).sum(-1)).clamp(min=numdiff.finfo(w.dtype).tiny).sqrt()
            return w + diagonal.diag_embed()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diagonal = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = numdiff.arange(2, self.dim + 1, dtype=value.dtype, device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diagonal.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalizer = (
            0.5 * dm1 * math.log(math.pi) + numdiff.mvlgamma(alpha - 0.5, dm1) - numdiff.lgamma(alpha) * dm1
        )
        return unnormalized - normalizer


class Wishart(Distribution):
    """Wishart with `df` degrees of freedom (> dim - 1) and one of `covariance_matrix`,
    `precision_matrix` or `scale_tril` (batch + (dim, dim)); batch shapes broadcast.

    >>> d = numdiff.distributions.Wishart(3.0, covariance_matrix=numdiff.eye(2))
    >>> d.mean
    tensor([[3., 0.],
            [0., 3.]])
    """

    support = constraints.positive_definite
    has_rsample = True

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self._event_shape[-1] - 1),
        }

    def __init__(
        self,
        df: Tensor | float,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError(
                f"Wishart: exactly one of covariance_matrix, precision_matrix or scale_tril must be given, got {len(given)}"
            )
        matrix = given[0]
        if not isinstance(matrix, Tensor) or matrix.dim() < 2 or matrix.shape[-1] != matrix.shape[-2]:
            shown = tuple(matrix.shape) if isinstance(matrix, Tensor) else type(matrix).__name__
            raise ValueError(f"Wishart: the matrix must be a batch of square matrices, got {shown}")
        p = matrix.shape[-1]
        if isinstance(df, Number):
            batch_shape = Size(matrix.shape[:-2])
            self.df = numdiff.tensor(df, dtype=matrix.dtype, device=matrix.device)
        else:
            batch_shape = Size(_broadcast_shapes(tuple(matrix.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        # Checked whatever validate_args says, as PyTorch does: rsample needs chi2(df - i) for i < p.
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Wishart: df={df} must be greater than dim - 1 = {p - 1}")
        square = tuple(batch_shape) + (p, p)
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(square)
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(square)
        else:
            self.precision_matrix = precision_matrix.expand(square)
        if bool((self.df < p).any()):
            warnings.warn(
                "Wishart: low df values: singular samples are highly likely for dim - 1 < df < dim",
                stacklevel=2,
            )
        super().__init__(batch_shape, (p, p), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = numdiff.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def __getattr__(self, name: str) -> Any:
        # The two matrices not given are derived from scale_tril when first read, as in PyTorch.
        if (
            name in ("scale_tril", "covariance_matrix", "precision_matrix")
            and "_unbroadcasted_scale_tril" in self.__dict__
        ):
            tril = self._unbroadcasted_scale_tril
            square = tuple(self._batch_shape) + tuple(self._event_shape)
            if name == "scale_tril":
                return tril.expand(square)
            if name == "covariance_matrix":
                return (tril @ tril.mT).expand(square)
            identity = numdiff.eye(tril.shape[-1], dtype=tril.dtype, device=tril.device)
            return numdiff.cholesky_solve(identity.expand(tril.shape).contiguous(), tril).expand(square)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _df_matrix(self) -> Tensor:
        return self.df.reshape(*self._batch_shape, 1, 1)

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self._df_matrix() - self._event_shape[-1] - 1
        return numdiff.where(factor > 0, factor, math.nan) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        v = self.covariance_matrix
        diagonal = v.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (v.pow(2) + diagonal.unsqueeze(-1) * diagonal.unsqueeze(-2))

    def _bartlett(self, sample_shape: Any) -> Tensor:
        p = self._event_shape[-1]
        tril = self._unbroadcasted_scale_tril
        shape = tuple(sample_shape) + tuple(self._batch_shape)
        steps = numdiff.arange(p, dtype=tril.dtype, device=tril.device)
        chi2 = 2 * standard_gamma(0.5 * (self.df.unsqueeze(-1) - steps).expand(*shape, p))
        chi = chi2.sqrt().clamp(min=numdiff.finfo(tril.dtype).eps)
        below = numdiff.randn(*shape, p, p, dtype=tril.dtype, device=tril.device).tril(-1)
        factor = tril @ (below + chi.diag_embed())
        return factor @ factor.mT

    def rsample(self, sample_shape: Any = (), max_try_correction: int | None = None) -> Tensor:
        """Bartlett draws; a draw that rounding made singular is drawn again, up to
        `max_try_correction` times (10 by default), with a warning."""
        sample = self._bartlett(sample_shape)
        singular = ~self.support.check(sample)
        if bool(singular.any()):
            warnings.warn("Wishart.rsample: singular sample detected, drawing it again", stacklevel=2)
            for _ in range(10 if max_try_correction is None else max_try_correction):
                sample = numdiff.where(singular[..., None, None], self._bartlett(sample_shape), sample)
                singular = ~self.support.check(sample)
                if not bool(singular.any()):
                    break
        return sample

    def _log_det_scale(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        # Both operands at one batch shape, contiguous: numdiff's CUDA cholesky_solve neither
        # broadcasts its operands nor reads an expanded view's batch.
        tril = self._unbroadcasted_scale_tril
        square = _broadcast_shapes(tuple(value.shape[:-2]), tuple(tril.shape[:-2])) + (p, p)
        solved = numdiff.cholesky_solve(value.expand(square).contiguous(), tril.expand(square).contiguous())
        trace = solved.diagonal(dim1=-2, dim2=-1).sum(-1)
        return (
            -nu * (p * _LOG_2 / 2 + self._log_det_scale())
            - numdiff.mvlgamma(nu / 2, p)
            + (nu - p - 1) / 2 * numdiff.linalg.slogdet(value)[1]
            - trace / 2
        )

    def entropy(self) -> Tensor:
        nu, p = self.df, self._event_shape[-1]
        half = (nu / 2).unsqueeze(-1) - numdiff.arange(p, dtype=nu.dtype, device=nu.device) / 2
        multivariate_digamma = numdiff.digamma(half).sum(-1)
        return (
            (p + 1) * (p * _LOG_2 / 2 + self._log_det_scale())
            + numdiff.mvlgamma(nu / 2, p)
            - (nu - p - 1) / 2 * multivariate_digamma
            + nu * p / 2
        )
