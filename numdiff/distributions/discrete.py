"""Discrete distributions: Categorical, OneHotCategorical and Bernoulli, each made from `probs` or
from `logits` (exactly one). The other parameterisation is computed on first use and cached, as
PyTorch's lazy properties are; a cached one is not validated (PyTorch skips it too).
"""

from __future__ import annotations

from functools import cached_property
from numbers import Number
from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.distribution import Distribution, _broadcast_shapes, broadcast_all, delegated
from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.tensor import Size, Tensor


def _one_parameter(probs: Any, logits: Any) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _clamped_probs(probs: Tensor) -> Tensor:
    """probs kept eps away from 0 and 1, so their logarithms stay finite."""
    eps = numdiff.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


class Categorical(Distribution):
    """A choice among the K entries of the last dimension of `probs` (normalised to sum to one) or
    `logits` (normalised with logsumexp). Samples are int64 indices of shape batch_shape.

    >>> d = numdiff.distributions.Categorical(probs=numdiff.tensor([0.25, 0.75]))
    >>> d.log_prob(numdiff.tensor(1)).exp()
    tensor(0.7500)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(
        self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args: bool | None = None
    ) -> None:
        _one_parameter(probs, logits)
        name, param = ("probs", probs) if probs is not None else ("logits", logits)
        if not isinstance(param, Tensor):
            raise ValueError(f"`{name}` must be a numdiff.Tensor, got {type(param).__name__}")
        if param.dim() < 1:
            raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
        if probs is not None:
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.dim() > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    @cached_property
    def probs(self) -> Tensor:
        return self.logits.softmax(-1)

    @cached_property
    def logits(self) -> Tensor:
        return _clamped_probs(self.probs).log()

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    @property
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self) -> Tensor:
        return numdiff.full(
            self._extended_shape(), numdiff.nan, dtype=self._param.dtype, device=self._param.device
        )

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return self.mean

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Categorical:
        new = super().expand(batch_shape)
        new._param = new.__dict__[
            "probs" if "probs" in self.__dict__ and self._param is self.probs else "logits"
        ]
        return new

    def sample(self, sample_shape: Any = ()) -> Tensor:
        sample_shape = Size(sample_shape)
        rows = self.probs.detach().reshape(-1, self._num_events)
        draws = numdiff.multinomial(rows, max(sample_shape.numel(), 1), True).t()
        return draws.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        index = value.long().unsqueeze(-1)
        shape = Size(_broadcast_shapes(index.shape, self.logits.shape))
        index = index.expand(Size(shape[:-1] + (1,))).contiguous()
        return self.logits.expand(shape).gather(-1, index).squeeze(-1)

    def entropy(self) -> Tensor:
        # -inf logits (zero probabilities) contribute 0 * finite, not 0 * -inf.
        logits = self.logits.clamp(min=numdiff.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = numdiff.arange(self._num_events, dtype=numdiff.int64, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand(Size((self._num_events,) + tuple(self._batch_shape))) if expand else values


class OneHotCategorical(Distribution):
    """Categorical whose draws are one-hot vectors (event_shape (K,)) in the dtype of the parameter.

    >>> d = numdiff.distributions.OneHotCategorical(probs=numdiff.tensor([0.0, 1.0]))
    >>> d.sample()
    tensor([0., 1.])
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(
        self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args: bool | None = None
    ) -> None:
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        param = self._categorical._param
        super().__init__(self._categorical.batch_shape, param.shape[-1:], validate_args=validate_args)

    probs = delegated("_categorical", "probs")
    logits = delegated("_categorical", "logits")
    param_shape = delegated("_categorical", "param_shape")

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        return functional.one_hot(self.probs.argmax(-1), self._event_shape[0]).to(self.probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> OneHotCategorical:
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._categorical = self._categorical.expand(batch_shape)
        new._batch_shape = Size(batch_shape)
        return new

    def sample(self, sample_shape: Any = ()) -> Tensor:
        indices = self._categorical.sample(sample_shape)
        return functional.one_hot(indices, self._event_shape[0]).to(self._categorical._param.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self._event_shape[0]
        param = self._categorical._param
        values = numdiff.eye(n, dtype=param.dtype, device=param.device)
        values = values.reshape((n,) + (1,) * len(self._batch_shape) + (n,))
        return values.expand(Size((n,) + tuple(self._batch_shape) + (n,))) if expand else values


class Bernoulli(Distribution):
    """0/1 draws with probability `probs` of a one (or sigmoid(`logits`)), in the parameter's dtype.

    >>> numdiff.distributions.Bernoulli(logits=numdiff.tensor([0.0])).entropy()
    tensor([0.6931])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(
        self,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        _one_parameter(probs, logits)
        given = probs if probs is not None else logits
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(
            Size() if isinstance(given, Number) else self._param.shape, validate_args=validate_args
        )

    @cached_property
    def probs(self) -> Tensor:
        return self.logits.sigmoid()

    @cached_property
    def logits(self) -> Tensor:
        clamped = _clamped_probs(self.probs)
        return clamped.log() - (-clamped).log1p()

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        ones = (self.probs >= 0.5).to(self.probs.dtype)
        return numdiff.where(self.probs == 0.5, numdiff.nan, ones)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Bernoulli:
        new = super().expand(batch_shape)
        new._param = new.__dict__[
            "probs" if "probs" in self.__dict__ and self._param is self.probs else "logits"
        ]
        return new

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with numdiff.no_grad():
            return numdiff.bernoulli(self.probs.detach().expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_cross_entropy_with_logits(logits, value)

    def entropy(self) -> Tensor:
        return _cross_entropy_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = numdiff.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand(Size((2,) + tuple(self._batch_shape))) if expand else values


def _cross_entropy_with_logits(logits: Tensor, target: Tensor) -> Tensor:
    """-(t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))) written as softplus(x) - t x: no overflow
    for large |x|, and differentiable in both x and t (entropy needs the gradient through t)."""
    return functional.softplus(logits) - logits * target
