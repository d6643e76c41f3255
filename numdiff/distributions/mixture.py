"""MixtureSameFamily: a mixture whose components are the rightmost batch dimension of one
distribution, weighted by a Categorical (a mixture density network's output layer)."""

from __future__ import annotations

from typing import Any

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.discrete import Categorical
from numdiff.distributions.distribution import Distribution
from numdiff.tensor import Size, Tensor


class MixtureSameFamily(Distribution):
    """The mixture of the `k` components `component_distribution` holds in its last batch
    dimension, component `i` drawn with probability `mixture_distribution.probs[..., i]`.

    >>> D = numdiff.distributions
    >>> mix = D.MixtureSameFamily(D.Categorical(logits=numdiff.zeros(2)),
    ...                           D.Normal(numdiff.tensor([-1.0, 1.0]), numdiff.tensor([0.5, 0.5])))
    >>> mix.log_prob(numdiff.tensor(0.0))
    tensor(-2.2258)
    """

    arg_constraints: dict[str, constraints.Constraint] = {}
    has_rsample = False

    def __init__(
        self,
        mixture_distribution: Categorical,
        component_distribution: Distribution,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(
                "MixtureSameFamily: mixture_distribution must be a numdiff.distributions.Categorical, "
                f"got {type(mixture_distribution).__name__}"
            )
        if not isinstance(component_distribution, Distribution):
            raise ValueError(
                "MixtureSameFamily: component_distribution must be a numdiff.distributions.Distribution, "
                f"got {type(component_distribution).__name__}"
            )
        mixture_batch = tuple(mixture_distribution.batch_shape)
        component_batch = tuple(component_distribution.batch_shape)
        if not component_batch:
            raise ValueError(
                "MixtureSameFamily: component_distribution needs a batch dimension of components, "
                "got batch_shape ()"
            )
        for size1, size2 in zip(reversed(mixture_batch), reversed(component_batch[:-1])):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(
                    f"MixtureSameFamily: mixture_distribution.batch_shape {mixture_batch} is not compatible "
                    f"with component_distribution.batch_shape {component_batch} (all but its last dimension)"
                )
        components = mixture_distribution.logits.shape[-1]
        if components != component_batch[-1]:
            raise ValueError(
                f"MixtureSameFamily: mixture_distribution has {components} components but "
                f"component_distribution.batch_shape[-1] is {component_batch[-1]}"
            )
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = components
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(component_batch[:-1], component_distribution.event_shape, validate_args=validate_args)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        return self._component_distribution.support

    def _pad(self, x: Tensor) -> Tensor:
        """`x` with a size-1 component dimension before its event dimensions."""
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        """Mixture weights (batch + (k,)) broadcastable against the component's batch + (k,) + event."""
        extra_batch = len(self.batch_shape) - len(self._mixture_distribution.batch_shape)
        x = x.reshape(tuple(x.shape[:-1]) + (1,) * extra_batch + (x.shape[-1],))
        return x.reshape(tuple(x.shape) + (1,) * self._event_ndims)

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        return (probs * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        # The law of total variance: E[Var[X | i]] + Var[E[X | i]].
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_of_variances = (probs * self._component_distribution.variance).sum(dim)
        spread = (self._component_distribution.mean - self._pad(self.mean)).pow(2)
        return mean_of_variances + (probs * spread).sum(dim)

    def cdf(self, value: Tensor) -> Tensor:
        probs = self._mixture_distribution.probs
        return (self._component_distribution.cdf(self._pad(value)) * probs).sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        per_component = self._component_distribution.log_prob(self._pad(value))  # sample + batch + (k,)
        log_weights = numdiff.log_softmax(self._mixture_distribution.logits, dim=-1)
        return (per_component + log_weights).logsumexp(dim=-1)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with numdiff.no_grad():
            sample_shape = Size(sample_shape)
            chosen = self._mixture_distribution.sample(sample_shape)  # sample + mixture batch
            drawn = self._component_distribution.sample(sample_shape)  # sample + batch + (k,) + event
            dim = len(sample_shape) + len(self.batch_shape)
            index = chosen.reshape(tuple(chosen.shape) + (1,) * (len(self.event_shape) + 1))
            index = index.expand(tuple(drawn.shape[:dim]) + (1,) + tuple(self.event_shape))
            return drawn.gather(dim, index).squeeze(dim)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> MixtureSameFamily:
        batch_shape = Size(batch_shape)
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._component_distribution = self._component_distribution.expand(Size(tuple(batch_shape) + (self._num_component,)))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._batch_shape = batch_shape
        return new

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(\n  {self._mixture_distribution!r},\n  {self._component_distribution!r})"
        )
