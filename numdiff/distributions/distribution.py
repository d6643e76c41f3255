"""The Distribution base class: shapes, argument and sample validation, and the defaults that
subclasses build on (stddev from variance, sample from rsample under no_grad, perplexity).

Shapes follow PyTorch: a draw has shape `sample_shape + batch_shape + event_shape`; `log_prob`
returns one value per batch entry (the event dimensions are summed over by the density itself).
"""

from __future__ import annotations

from numbers import Number
from typing import Any

import numdiff
from numdiff._batched import physical
from numdiff.distributions import constraints
from numdiff.tensor import Size, Tensor


class Distribution:
    """Base class of probability distributions, PyTorch's torch.distributions.Distribution.

    Validation (`validate_args`) is on by default, as in PyTorch outside `python -O`: parameters
    are checked against `arg_constraints` when the distribution is made, and `log_prob`'s value
    against `support`. `Distribution.set_default_validate_args(False)` turns it off everywhere.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    arg_constraints: dict[str, constraints.Constraint] = {}
    support: constraints.Constraint | None = None

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args expects True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(
        self, batch_shape: Any = (), event_shape: Any = (), validate_args: bool | None = None
    ) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # bounds that depend on other parameters
                if param in self.__dict__:
                    value = self.__dict__[param]
                elif isinstance(getattr(type(self), param, None), property):
                    value = getattr(self, param)  # read from a base distribution (HalfCauchy's scale)
                else:
                    continue  # a lazily derived parameter not yet computed (Categorical's logits)
                if not _all_hold(constraint.check(value)):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{_shown(value)}"
                    )

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """A draw of shape `sample_shape + batch_shape + event_shape`, cut from the graph."""
        with numdiff.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """A reparameterised draw: a differentiable function of the parameters and fixed noise."""
        raise NotImplementedError(f"{type(self).__name__} has no reparameterised sampler (has_rsample=False)")

    def sample_n(self, n: int) -> Tensor:
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob")

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf")

    def entropy(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement enumerate_support")

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Distribution:
        """The same distribution with its parameters expanded (not copied) to `batch_shape`."""
        batch_shape = Size(batch_shape)
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        for name in self.arg_constraints:
            if name in self.__dict__:
                value = self.__dict__[name]
                new.__dict__[name] = value.expand(Size(batch_shape + value.shape[len(self._batch_shape) :]))
        new._batch_shape = batch_shape
        return new

    def _extended_shape(self, sample_shape: Any = ()) -> Size:
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_start:]) != tuple(self._event_shape):
            raise ValueError(
                f"The right-most size of value must match event_shape: {value.shape} vs {self._event_shape}."
            )
        expected = Size(self._batch_shape + self._event_shape)
        for actual_size, expected_size in zip(reversed(value.shape), reversed(expected)):
            if actual_size != 1 and expected_size != 1 and actual_size != expected_size:
                raise ValueError(
                    f"Value is not broadcastable with batch_shape+event_shape: {value.shape} vs {expected}."
                )
        support = self.support
        if not _all_hold(support.check(value)):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, "
                f"but found invalid values:\n{_shown(value)}"
            )

    def __repr__(self) -> str:
        shown = []
        for name in self.arg_constraints:
            if name in self.__dict__:
                value = self.__dict__[name]
                shown.append(f"{name}: {_shown(value) if value.numel() == 1 else value.size()}")
        return f"{type(self).__name__}({', '.join(shown)})"


def delegated(holder: str, name: str) -> property:
    """A read-only property answering with attribute `name` of the distribution this one is built
    on, held in attribute `holder` ("base_dist", "_categorical"): a RelaxedBernoulli's probs are its
    base LogitRelaxedBernoulli's, a Multinomial's its Categorical's."""
    return property(lambda self: getattr(getattr(self, holder), name), doc=f"The {name} of self.{holder}.")


def _shown(value: Tensor) -> Tensor:
    """`value` for an error message: under vmap the whole batch (formatting one entry would be
    data-dependent, and raise)."""
    return physical(value)[0]


def _all_hold(valid: Tensor) -> bool:
    """Whether every element of a constraint check holds; under numdiff.func.vmap, in every batch
    entry (bool() of a batched tensor would be data-dependent control flow, and raise)."""
    return bool(physical(valid)[0].all())


def broadcast_all(*values: Tensor | Number) -> tuple[Tensor, ...]:
    """Tensors broadcast to one shape; numbers become tensors with the dtype and device of the first
    tensor among `values` (the default dtype when there is none)."""
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        kinds = ", ".join(type(v).__name__ for v in values)
        raise ValueError(f"Input arguments must all be instances of Number or numdiff.Tensor, got {kinds}")
    like = next((v for v in values if isinstance(v, Tensor)), None)
    options = (
        {"dtype": numdiff.get_default_dtype()}
        if like is None
        else {"dtype": like.dtype, "device": like.device}
    )
    tensors = [v if isinstance(v, Tensor) else numdiff.tensor(v, **options) for v in values]
    shape = Size(_broadcast_shapes(*(t.shape for t in tensors)))
    return tuple(t if t.shape == shape else t.expand(shape) for t in tensors)


def _broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape, start=ndim - len(shape)):
            if size != 1 and result[i] not in (1, size):
                shown = " and ".join(str(tuple(s)) for s in shapes)
                raise RuntimeError(f"The shapes {shown} cannot be broadcast together (dimension {i - ndim})")
            if size != 1:
                result[i] = size
    return tuple(result)


def sum_rightmost(value: Tensor, dims: int) -> Tensor:
    """`value` summed over its last `dims` dimensions."""
    return value if dims == 0 else value.reshape(*value.shape[: value.dim() - dims], -1).sum(-1)


def noise(draw: str, shape: Any, like: Tensor) -> Tensor:
    """Standard noise (`draw` is 'normal' or 'uniform') of `shape` with `like`'s dtype and device:
    a constant, so rsample's gradient flows only through the parameters it is combined with."""
    maker = numdiff.randn if draw == "normal" else numdiff.rand
    return maker(Size(shape), dtype=like.dtype, device=like.device)
