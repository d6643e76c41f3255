"""Random benchmark inputs, as ``torch.utils.benchmark``'s Fuzzer: draws of named parameters
(sizes, steps, dims), and tensors shaped by them, some laid out non-contiguously.

A draw is rejected and drawn again when a tensor's element count falls outside its
``[min_elements, max_elements]`` or a constraint is false, so every draw returned satisfies them.

>>> fuzzer = Fuzzer([FuzzedParameter("n", 1, 64)], [FuzzedTensor("x", size=("n", 8))], seed=0)
>>> for tensors, properties, params in fuzzer.take(2):
...     assert tensors["x"].shape == (params["n"], 8)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff.creation import from_numpy
from numdiff.tensor import Tensor

__all__ = ["FuzzedParameter", "FuzzedTensor", "Fuzzer", "ParameterAlias"]

_MAX_TRIES = 1000


class FuzzedParameter:
    """A named value drawn from [minval, maxval] ('uniform' or 'loguniform'; ints when both bounds
    are ints), or from a dict ``{value: probability}``."""

    def __init__(self, name: str, minval: float | None = None, maxval: float | None = None,
                 distribution: str | dict | None = None, strict: bool = False) -> None:
        self.name, self.strict = name, strict
        if isinstance(distribution, dict):
            total = sum(distribution.values())
            if not math.isclose(total, 1.0, rel_tol=1e-6):
                raise ValueError(f"FuzzedParameter({name!r}): the probabilities must sum to 1, got {total}")
            self._choices = (list(distribution), np.array(list(distribution.values()), dtype=np.float64))
        elif distribution in ("uniform", "loguniform"):
            if minval is None or maxval is None or minval > maxval:
                raise ValueError(f"FuzzedParameter({name!r}): need minval <= maxval, got {minval} and {maxval}")
            if distribution == "loguniform" and minval <= 0:
                raise ValueError(f"FuzzedParameter({name!r}): loguniform needs minval > 0, got {minval}")
            self._choices = None
        else:
            raise ValueError(f"FuzzedParameter({name!r}): distribution must be 'uniform', 'loguniform' or a dict, got {distribution!r}")
        self.minval, self.maxval, self.distribution = minval, maxval, distribution

    def sample(self, state: np.random.RandomState) -> Any:
        """One draw."""
        if self._choices is not None:
            values, probabilities = self._choices
            return values[state.choice(len(values), p=probabilities)]
        integral = isinstance(self.minval, int) and isinstance(self.maxval, int)
        if self.distribution == "uniform":
            return int(state.randint(self.minval, self.maxval + 1)) if integral else float(state.uniform(self.minval, self.maxval))
        value = math.exp(state.uniform(math.log(self.minval), math.log(self.maxval)))
        return min(max(int(value), self.minval), self.maxval) if integral else value


class ParameterAlias:
    """A value in a FuzzedParameter's distribution dict that stands for what another parameter
    drew: ``FuzzedParameter("k1", distribution={ParameterAlias("k0"): 0.5, 1: 0.5})``."""

    def __init__(self, alias_to: str) -> None:
        self.alias_to = alias_to


class FuzzedTensor:
    """A tensor named `name` whose `size` (and `steps`, stride multipliers of a non-contiguous
    layout) are ints or parameter names; contiguous with `probability_contiguous`."""

    def __init__(self, name: str, size: tuple, steps: tuple | None = None, probability_contiguous: float = 0.5,
                 min_elements: int | None = None, max_elements: int | None = None,
                 max_allocation_bytes: int | None = None, dim_parameter: str | None = None,
                 roll_parameter: str | None = None, dtype: Any = _dtype.float32, cuda: bool = False,
                 tensor_constructor: Callable[..., Any] | None = None) -> None:
        if steps is not None and len(steps) != len(size):
            raise ValueError(f"FuzzedTensor({name!r}): steps {steps} must have one entry per dim of size {size}")
        if cuda:
            raise ValueError(f"FuzzedTensor({name!r}): cuda=True is not supported; move the tensors after drawing")
        self.name, self.size, self.steps = name, tuple(size), steps
        self.probability_contiguous = probability_contiguous
        self.min_elements, self.max_elements = min_elements, max_elements
        self.max_allocation_bytes, self.dim_parameter, self.roll_parameter = max_allocation_bytes, dim_parameter, roll_parameter
        self.dtype, self.tensor_constructor = dtype, tensor_constructor

    def _resolve(self, values: tuple, params: dict) -> tuple[int, ...]:
        return tuple(int(params[v] if isinstance(v, str) else v) for v in values)

    def satisfies(self, params: dict) -> bool:
        """Whether the drawn sizes give an element count (and allocation) within the bounds."""
        size = self._resolve(self.size, params)
        if self.dim_parameter is not None:
            size = size[: params[self.dim_parameter]]
        steps = self._resolve(self.steps, params) if self.steps is not None else (1,) * len(size)
        numel = math.prod(size)
        allocation = math.prod(s * t for s, t in zip(size, steps)) * self.dtype.itemsize
        return ((self.min_elements is None or numel >= self.min_elements)
                and (self.max_elements is None or numel <= self.max_elements)
                and (self.max_allocation_bytes is None or allocation <= self.max_allocation_bytes))

    def make(self, params: dict, state: np.random.RandomState) -> tuple[Tensor, dict]:
        """The tensor for these parameters, and its properties (numel, order, steps, ...)."""
        size = self._resolve(self.size, params)
        if self.dim_parameter is not None:
            size = size[: params[self.dim_parameter]]
        steps = self._resolve(self.steps, params)[: len(size)] if self.steps is not None else (1,) * len(size)
        contiguous = bool(state.rand() < self.probability_contiguous)
        if contiguous:
            order, steps = tuple(range(len(size))), (1,) * len(size)
        else:
            order = tuple(int(i) for i in state.permutation(len(size)))
        allocation = tuple(s * t for s, t in zip(size, steps))
        stored = tuple(allocation[i] for i in order)  # the memory layout: dims in `order`
        if self.tensor_constructor is not None:
            made = self.tensor_constructor(size=stored, dtype=self.dtype, **params)
            raw = made.numpy() if isinstance(made, Tensor) else np.asarray(made)
        else:
            raw = state.rand(*stored).astype(self.dtype.numpy)
        data = np.transpose(raw, tuple(int(i) for i in np.argsort(order)))[tuple(slice(None, None, t) for t in steps)]
        if self.roll_parameter is not None:
            data = np.roll(data, params[self.roll_parameter])
        tensor = from_numpy(data)
        properties = {"numel": math.prod(size), "order": order, "steps": steps,
                      "is_contiguous": bool(data.flags.c_contiguous), "dtype": str(self.dtype)}
        return tensor, properties


class Fuzzer:
    """Draws parameters, then tensors from them; `take(n)` yields n draws that satisfy the
    tensors' element bounds and the `constraints` (callables of the parameter dict)."""

    def __init__(self, parameters: list, tensors: list, constraints: list | None = None, seed: int | None = None) -> None:
        self._parameters = list(_flatten(parameters))
        self._tensors = list(_flatten(tensors))
        for p in self._parameters:
            if not isinstance(p, FuzzedParameter):
                raise TypeError(f"Fuzzer: parameters must be FuzzedParameters, got {type(p).__name__}")
        names = [p.name for p in self._parameters]
        if len(set(names)) != len(names):
            raise ValueError(f"Fuzzer: parameter names must be unique, got {names}")
        self._constraints = list(constraints or ())
        self._state = np.random.RandomState(seed)

    def take(self, n: int) -> Iterator[tuple[dict, dict, dict]]:
        """`n` draws of (tensors by name, tensor properties by name, parameters by name)."""
        for _ in range(n):
            params = self._draw_parameters()
            tensors, properties = {}, {}
            for t in self._tensors:
                tensors[t.name], properties[t.name] = t.make(params, self._state)
            yield tensors, properties, params

    def _draw_parameters(self) -> dict:
        for _ in range(_MAX_TRIES):
            params = {p.name: p.sample(self._state) for p in self._parameters}
            for name in params:  # a draw of ParameterAlias("k") takes k's value
                seen = {name}
                while isinstance(params[name], ParameterAlias):
                    target = params[name].alias_to
                    if target not in params or target in seen:
                        raise ValueError(f"Fuzzer: parameter {name!r} aliases {target!r}, which is unknown or circular")
                    seen.add(target)
                    params[name] = params[target]
            if all(t.satisfies(params) for t in self._tensors) and all(c(params) for c in self._constraints):
                return params
        raise ValueError(f"Fuzzer: no draw in {_MAX_TRIES} tries satisfied the tensors' bounds and the constraints")


def _flatten(items: Any) -> Iterator[Any]:
    for item in items:
        if isinstance(item, (list, tuple)):
            yield from _flatten(item)
        else:
            yield item
