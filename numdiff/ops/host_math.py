"""PyTorch's functions computed on the host that have no gradient: integer number theory (gcd,
lcm), IEEE helpers (nextafter, frexp), unique_consecutive, and the counting distributions
(poisson, binomial). Each reads its operands' values on the host and places the result on the
first operand's device."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from numdiff import _random
from numdiff._host_functions import host_function, random_function
from numdiff._torch_misc import result_type
from numdiff.ops._util import ensure_tensor, normalize_dim
from numdiff.ops.search import _host, _on_device_of
from numdiff.tensor import Tensor

frexp_result = namedtuple("frexp", ["mantissa", "exponent"])


def _integers(op: str, *tensors: Tensor) -> list[np.ndarray]:
    arrays = []
    for t in tensors:
        t = ensure_tensor(op, t)
        if t.dtype.is_floating_point or t._data.dtype.kind == "b":
            raise TypeError(f"{op}: expected integer tensors, got {t.dtype}")
        arrays.append(_host(op, t))
    return arrays


@host_function(elementwise=True)
def gcd(input: Tensor, other: Tensor) -> Tensor:
    """The greatest common divisor of integer tensors, elementwise (non-negative)."""
    a, b = _integers("gcd", input, other)
    return _on_device_of(np.gcd(a, b).astype(np.result_type(a, b)), input)


@host_function(elementwise=True)
def lcm(input: Tensor, other: Tensor) -> Tensor:
    """The least common multiple of integer tensors, elementwise (non-negative)."""
    a, b = _integers("lcm", input, other)
    return _on_device_of(np.lcm(a, b).astype(np.result_type(a, b)), input)


@host_function(elementwise=True)
def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating point value after `input` towards `other`, elementwise."""
    input, other = ensure_tensor("nextafter", input), ensure_tensor("nextafter", other, "other")
    dtype = result_type(input, other)  # PyTorch promotes: nextafter(int8, float16) is float16
    if not dtype.is_floating_point:
        raise NotImplementedError(f"nextafter: not implemented for integer or bool operands ({input.dtype} and {other.dtype}), as in PyTorch")
    input, other = input.to(dtype), other.to(dtype)
    if input._data.dtype.kind != "f":
        raise TypeError(f"nextafter: bfloat16 is not supported (its neighbours are not NumPy's); got {input.dtype}, convert to float32")
    return _on_device_of(np.nextafter(_host("nextafter", input), _host("nextafter", other)), input)


def frexp(input: Tensor) -> frexp_result:
    """(mantissa, exponent) with input = mantissa * 2**exponent and 0.5 <= |mantissa| < 1."""
    input = ensure_tensor("frexp", input)
    if input._data.dtype.kind != "f":
        raise TypeError(f"frexp: expected a float16, float32 or float64 tensor, got {input.dtype}")
    return frexp_result(_frexp_part(input, 0), _frexp_part(input, 1))


@host_function(elementwise=True)
def _frexp_part(input: Tensor, part: int) -> Tensor:
    mantissa, exponent = np.frexp(_host("frexp", input))
    return _on_device_of(mantissa if part == 0 else exponent.astype(np.int32), input)


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None) -> Any:
    """The elements (or slices along `dim`) with each run of equal consecutive ones kept once;
    optionally each element's run number (inverse) and the run lengths (counts)."""
    input = ensure_tensor("unique_consecutive", input)
    if dim is not None:
        dim = normalize_dim("unique_consecutive", dim, max(input.ndim, 1))
    parts = ["values"] + ["inverse"] * bool(return_inverse) + ["counts"] * bool(return_counts)
    out = tuple(_unique_consecutive_part(input, part, dim) for part in parts)
    return out[0] if len(out) == 1 else out


@host_function
def _unique_consecutive_part(input: Tensor, part: str, dim: int | None) -> Tensor:
    data = _host("unique_consecutive", input)
    flat = np.moveaxis(data, dim, 0) if dim is not None else data.reshape(-1)
    if flat.shape[0] == 0:
        starts = np.zeros(0, dtype=bool)
    else:
        changed = np.any((flat[1:] != flat[:-1]).reshape(flat.shape[0] - 1, -1), axis=1)
        starts = np.concatenate([[True], changed])
    run = np.cumsum(starts) - 1
    if part == "values":
        kept = flat[starts]
        return _on_device_of(np.moveaxis(kept, 0, dim) if dim is not None else kept, input)
    if part == "inverse":
        return _on_device_of((run if dim is not None else run.reshape(data.shape)).astype(np.int64), input)
    return _on_device_of(np.diff(np.append(np.flatnonzero(starts), flat.shape[0])).astype(np.int64), input)


@random_function
def poisson(input: Tensor, generator: Any = None) -> Tensor:
    """Samples of Poisson distributions with the rates in `input` (a float tensor, rates >= 0)."""
    input = ensure_tensor("poisson", input)
    if not input.is_floating_point():
        raise TypeError(f"poisson: rates must be a floating point tensor, got {input.dtype}")
    rates = _host("poisson", input)
    if np.any(rates < 0) or np.any(np.isnan(rates)):
        raise ValueError("poisson: rates must be non-negative numbers")
    # np.asarray: NumPy returns a Python int for a 0-d rate, which has no astype.
    draws = np.asarray(_random.rng(generator).poisson(rates.astype(np.float64))).astype(rates.dtype)
    return _on_device_of(draws, input)


@random_function
def binomial(count: Tensor, prob: Tensor, generator: Any = None) -> Tensor:
    """Samples of binomial distributions: `count` trials each succeeding with probability `prob`."""
    count, prob = ensure_tensor("binomial", count, "count"), ensure_tensor("binomial", prob, "prob")
    if not prob.is_floating_point() or not count.is_floating_point():
        raise TypeError(f"binomial: count and prob must be floating point tensors, got {count.dtype} and {prob.dtype}")
    n, p = _host("binomial", count), _host("binomial", prob)
    if np.any(p < 0) or np.any(p > 1) or np.any(n < 0):
        raise ValueError("binomial: prob must be in [0, 1] and count non-negative")
    draws = np.asarray(_random.rng(generator).binomial(n.astype(np.int64), p.astype(np.float64))).astype(p.dtype)
    return _on_device_of(draws, prob)


FUNCTIONS = {fn.__name__: fn for fn in (gcd, lcm, nextafter, frexp, unique_consecutive, poisson, binomial)}
