"""ContinuousBernoulli: the normalised density p^x (1 - p)^(1 - x) on [0, 1] (Loaiza-Ganem and
Cunningham 2019), the likelihood of VAEs on pixel intensities.

Its normaliser, mean and variance are 0/0 at p = 1/2, so inside `lims` (default (0.499, 0.501))
they are Taylor expansions about p = 1/2 and the closed forms read p held at lims[0], as in
PyTorch. rsample inverts the cdf of uniform noise, so it is differentiable in the parameter.
"""

from __future__ import annotations

import math
from functools import cached_property
from numbers import Number
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.discrete import _clamped_probs, _cross_entropy_with_logits, _one_parameter
from numdiff.distributions.distribution import Distribution, broadcast_all, noise
from numdiff.tensor import Size, Tensor


class ContinuousBernoulli(Distribution):
    """Continuous Bernoulli on [0, 1] with shape parameter `probs` (or `logits`).

    >>> numdiff.distributions.ContinuousBernoulli(probs=numdiff.tensor([0.2])).mean
    tensor([0.3288])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        lims: tuple[float, float] = (0.499, 0.501),
        validate_args: bool | None = None,
    ) -> None:
        _one_parameter(probs, logits)
        given = probs if probs is not None else logits
        if probs is not None:
            (probs,) = broadcast_all(probs)
            # PyTorch checks probs here only when validate_args is given, then clamps them into
            # (0, 1); the default validation sees the clamped values.
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = _clamped_probs(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(
            Size() if isinstance(given, Number) else self._param.shape, validate_args=validate_args
        )

    @cached_property
    def probs(self) -> Tensor:
        return _clamped_probs(self.logits.sigmoid())

    @cached_property
    def logits(self) -> Tensor:
        clamped = _clamped_probs(self.probs)
        return clamped.log() - (-clamped).log1p()

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> ContinuousBernoulli:
        new = super().expand(batch_shape)
        new._param = new.__dict__["probs" if self._param is self.__dict__.get("probs") else "logits"]
        return new

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        return numdiff.where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _log_normaliser(self) -> Tensor:
        """log C(p), C(p) = 2 artanh(1 - 2p) / (1 - 2p); log 2 + (4/3) x + (104/45) x^2 near
        p = 1/2, with x = (p - 1/2)^2."""
        cut = self._cut_probs()
        below = numdiff.where(cut <= 0.5, cut, 0.0)
        above = numdiff.where(cut >= 0.5, cut, 1.0)
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - numdiff.where(
            cut <= 0.5, (-2.0 * below).log1p(), (2.0 * above - 1.0).log()
        )
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return numdiff.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        exact = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return numdiff.where(self._outside_unstable_region(), exact, taylor)

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        exact = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / ((-cut).log1p() - cut.log()).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return numdiff.where(self._outside_unstable_region(), exact, taylor)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with numdiff.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.icdf(noise("uniform", self._extended_shape(sample_shape), self._param))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_cross_entropy_with_logits(logits, value) + self._log_normaliser()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        inside = numdiff.where(self._outside_unstable_region(), cdfs, value)
        return numdiff.where(value <= 0.0, 0.0, numdiff.where(value >= 1.0, 1.0, inside))

    def icdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        exact = ((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p()) / (cut.log() - (-cut).log1p())
        return numdiff.where(self._outside_unstable_region(), exact, value)

    def entropy(self) -> Tensor:
        log_probs0 = (-self.probs).log1p()
        log_probs1 = self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._log_normaliser() - log_probs0
