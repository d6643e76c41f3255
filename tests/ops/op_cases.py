"""The op case table: float64 cases for every op registered in ``numdiff.ops.registry.OPS``.

tests/ops/test_registry.py fails for any registered op without a case, and for any case whose
callable never records the op it claims to cover. tests/ops/test_op_cases.py runs, for every case,
a forward check against the NumPy reference, ``gradcheck`` and (unless switched off) ``gradgradcheck``.

How to add cases for an op registered later (matmul, conv2d, max_pool2d, ...):

* Put them in a module ``tests/ops/cases_<family>.py`` (for example ``cases_linalg.py``) that
  defines a list named ``CASES`` of `OpCase`; every ``cases_*.py`` module here is picked up by
  `all_cases()` with no other edit. Or append to ``CORE_CASES`` below.
* ``op`` is the name the op was registered under. A public function composed of other ops (mean,
  softmax, ...) may have cases too, with ``op=None``: they are checked but cover no registered op.
* ``inputs(rng)`` returns the positional arguments. A float64 array becomes a tensor that requires
  grad (and is checked); an integer or bool array, or a float64 array wrapped in `Const`, becomes a
  constant tensor; anything else is passed as is.
* ``fn(*tensors)`` calls the public API (``numdiff.foo`` or a Tensor method); ``reference(*arrays)``
  computes the same with NumPy on the raw arrays. Either may return a tuple of outputs.
* Keep shapes tiny (a few elements): gradcheck differentiates every element numerically.
* Keep inputs away from kinks (relu at 0, clamp bounds, ties in max) by more than gradcheck's eps.

Example (in tests/ops/cases_linalg.py)::

    from tests.ops.op_cases import OpCase

    CASES = [
        OpCase("matmul", "2x3@3x2", lambda rng: (rng.standard_normal((2, 3)), rng.standard_normal((3, 2))),
               lambda a, b: a @ b, lambda a, b: a @ b),
    ]
"""

from __future__ import annotations

import importlib
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import numdiff
import numdiff.nn.functional as nf
from numdiff.ops.registry import OPS


@dataclass(frozen=True)
class Const:
    """A float array passed to the op as a constant tensor (no gradient checked for it)."""

    array: np.ndarray


@dataclass(frozen=True)
class OpCase:
    """One way of calling one op, with its NumPy reference."""

    op: str | None
    name: str
    inputs: Callable[[np.random.Generator], tuple]
    fn: Callable[..., Any]
    reference: Callable[..., Any]
    # gradcheck/gradgradcheck keyword arguments (eps, atol, rtol) where the defaults do not fit.
    tolerances: dict = field(default_factory=dict)
    second_order: bool = True
    # Forward check tolerances: float64 ops should match NumPy to rounding.
    forward_rtol: float = 1e-12
    forward_atol: float = 1e-12

    @property
    def id(self) -> str:
        return f"{self.op or 'composite'}-{self.name}"


def to_tensors(arguments: tuple) -> tuple:
    """The tensors a case's `fn` receives, built from what its `inputs` returned."""
    tensors = []
    for value in arguments:
        if isinstance(value, Const):
            tensors.append(numdiff.tensor(value.array))
        elif isinstance(value, np.ndarray):
            t = numdiff.tensor(value)
            if value.dtype == np.float64:
                t.requires_grad_(True)
            tensors.append(t)
        else:
            tensors.append(value)
    return tuple(tensors)


def to_arrays(arguments: tuple) -> tuple:
    """The arrays a case's `reference` receives (copies, so a reference cannot disturb the inputs)."""
    return tuple(
        value.array.copy()
        if isinstance(value, Const)
        else value.copy()
        if isinstance(value, np.ndarray)
        else value
        for value in arguments
    )


# ----------------------------------------------------------------------------- input builders
def normal(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.standard_normal(shape)


def uniform(low: float, high: float, *shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.uniform(low, high, shape)


def away_from_zero(
    *shape: int, low: float = 0.2, high: float = 2.0
) -> Callable[[np.random.Generator], np.ndarray]:
    """Values with |x| in [low, high] and random signs, so kinks at 0 are out of gradcheck's reach."""
    return lambda rng: rng.uniform(low, high, shape) * rng.choice([-1.0, 1.0], shape)


def distinct(*shape: int, spacing: float = 0.25) -> Callable[[np.random.Generator], np.ndarray]:
    """A shuffled grid: no two elements within `spacing` of each other, so there are no ties."""
    size = math.prod(shape)
    return lambda rng: (rng.permutation(size) - size / 2).reshape(shape) * spacing


def args(*builders: Any) -> Callable[[np.random.Generator], tuple]:
    """Combine per-argument builders (or fixed `Const` values) into a case's `inputs`."""
    return lambda rng: tuple(build(rng) if callable(build) else build for build in builders)


def constant(value: Any) -> Callable[[np.random.Generator], Any]:
    return lambda rng: value


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _softplus(x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _scatter_add(x: np.ndarray, dim: int, index: np.ndarray, src: np.ndarray) -> np.ndarray:
    out = x.copy()
    for position in np.ndindex(*index.shape):
        target = list(position)
        target[dim] = index[position]
        out[tuple(target)] += src[position]
    return out


def _index_add_into_zeros(grad: np.ndarray, key: tuple, shape: tuple) -> np.ndarray:
    out = np.zeros(shape)
    np.add.at(out, key, grad)
    return out


def _set(x: np.ndarray, key: Any, value: Any) -> np.ndarray:
    out = x.copy()
    out[key] = value
    return out


def _setitem(key: Any) -> Callable:
    def fn(x, value):
        out = x.clone()
        out[key] = value
        return out

    return fn


def _softmax(x: np.ndarray, dim: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _logsumexp(x: np.ndarray, dim: int, keepdim: bool = False) -> np.ndarray:
    m = x.max(axis=dim, keepdims=True)
    out = np.log(np.exp(x - m).sum(axis=dim, keepdims=True)) + m
    return out if keepdim else out.squeeze(axis=dim)


INT_INDEX = np.array([0, 2, 0, 1])  # repeats 0: the backward must accumulate, not overwrite
GATHER_INDEX = np.array([[0, 3], [1, 1], [2, 0]])
BOOL_MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])


CORE_CASES: list[OpCase] = [
    # ------------------------------------------------------------------ arithmetic
    OpCase("add", "broadcast", args(normal(2, 3), normal(3)), lambda a, b: a + b, lambda a, b: a + b),
    OpCase("add", "scalar", args(normal(2, 3)), lambda a: 1.5 + a, lambda a: 1.5 + a),
    OpCase(
        "add",
        "alpha",
        args(normal(3, 1), normal(1, 2)),
        lambda a, b: numdiff.add(a, b, alpha=2.5),
        lambda a, b: a + 2.5 * b,
    ),
    OpCase("sub", "broadcast", args(normal(2, 1, 3), normal(4, 1)), lambda a, b: a - b, lambda a, b: a - b),
    OpCase("sub", "reflected", args(normal(3)), lambda a: 2.0 - a, lambda a: 2.0 - a),
    OpCase("mul", "broadcast", args(normal(2, 3), normal(2, 1)), lambda a, b: a * b, lambda a, b: a * b),
    OpCase("mul", "self", args(normal(4)), lambda a: a * a, lambda a: a * a),
    OpCase(
        "div",
        "broadcast",
        args(normal(2, 3), away_from_zero(3, low=0.5)),
        lambda a, b: a / b,
        lambda a, b: a / b,
    ),
    OpCase("div", "reflected", args(away_from_zero(4, low=0.5)), lambda a: 3.0 / a, lambda a: 3.0 / a),
    OpCase("neg", "plain", args(normal(2, 2)), lambda a: -a, lambda a: -a),
    OpCase(
        "pow",
        "tensor-exponent",
        args(uniform(0.5, 2.0, 2, 3), normal(3)),
        lambda a, b: a**b,
        lambda a, b: a**b,
    ),
    OpCase("pow", "cube", args(normal(5)), lambda a: a**3, lambda a: a**3),
    OpCase(
        "pow",
        "negative-fraction",
        args(uniform(0.5, 2.0, 4)),
        lambda a: numdiff.pow(a, -1.5),
        lambda a: a**-1.5,
    ),
    OpCase("pow", "reflected", args(normal(4)), lambda a: 2.0**a, lambda a: 2.0**a),
    # ------------------------------------------------------------------ unary
    OpCase("exp", "plain", args(normal(2, 3)), numdiff.exp, np.exp),
    OpCase("log", "plain", args(uniform(0.3, 3.0, 2, 3)), numdiff.log, np.log),
    OpCase("log1p", "plain", args(uniform(-0.5, 2.0, 5)), numdiff.log1p, np.log1p),
    OpCase("expm1", "plain", args(normal(5)), numdiff.expm1, np.expm1),
    OpCase("sqrt", "plain", args(uniform(0.3, 3.0, 2, 2)), numdiff.sqrt, np.sqrt),
    OpCase("rsqrt", "plain", args(uniform(0.3, 3.0, 4)), numdiff.rsqrt, lambda x: 1 / np.sqrt(x)),
    OpCase("abs", "plain", args(away_from_zero(2, 3)), numdiff.abs, np.abs),
    OpCase("sign", "plain", args(away_from_zero(5)), numdiff.sign, np.sign),
    OpCase("sin", "plain", args(normal(2, 3)), numdiff.sin, np.sin),
    OpCase("cos", "plain", args(normal(2, 3)), numdiff.cos, np.cos),
    OpCase("tanh", "plain", args(normal(2, 3)), numdiff.tanh, np.tanh),
    OpCase("sigmoid", "plain", args(uniform(-6, 6, 2, 3)), numdiff.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    OpCase("erf", "plain", args(normal(2, 3)), numdiff.erf, _erf),
    OpCase("atan", "plain", args(normal(2, 3)), numdiff.atan, np.arctan),
    OpCase("tan", "plain", args(uniform(-1.2, 1.2, 2, 3)), numdiff.tan, np.tan),
    OpCase("asin", "plain", args(uniform(-0.8, 0.8, 2, 3)), numdiff.asin, np.arcsin),
    OpCase("acos", "plain", args(uniform(-0.8, 0.8, 2, 3)), lambda x: x.acos(), np.arccos),
    OpCase("sinh", "plain", args(normal(2, 3)), numdiff.sinh, np.sinh),
    OpCase("cosh", "plain", args(normal(2, 3)), lambda x: x.cosh(), np.cosh),
    OpCase("asinh", "plain", args(normal(2, 3)), numdiff.asinh, np.arcsinh),
    OpCase("acosh", "plain", args(uniform(1.3, 4.0, 2, 3)), numdiff.acosh, np.arccosh),
    OpCase("atanh", "plain", args(uniform(-0.8, 0.8, 2, 3)), numdiff.atanh, np.arctanh),
    OpCase("log2", "plain", args(uniform(0.3, 3.0, 2, 3)), numdiff.log2, np.log2),
    OpCase("log10", "plain", args(uniform(0.3, 3.0, 2, 3)), lambda x: x.log10(), np.log10),
    OpCase("exp2", "plain", args(normal(2, 3)), numdiff.exp2, np.exp2),
    OpCase("square", "plain", args(normal(2, 3)), numdiff.square, np.square),
    OpCase("reciprocal", "plain", args(away_from_zero(2, 3)), lambda x: x.reciprocal(), np.reciprocal),
    # fmod/remainder: quotients away from integers, where the functions jump
    OpCase(
        "fmod", "plain", args(constant(np.array([-7.3, -2.2, 0.7, 3.9, 5.6])), constant(np.array([2.0, -1.5, 0.5, -2.5, 1.7]))),
        numdiff.fmod, np.fmod,
    ),
    OpCase(
        "remainder", "plain", args(constant(np.array([-7.3, -2.2, 0.7, 3.9, 5.6])), constant(np.array([2.0, -1.5, 0.5, -2.5, 1.7]))),
        lambda a, b: a % b, np.remainder,
    ),
    OpCase("remainder", "scalar", args(constant(np.array([-7.3, -2.2, 0.7, 3.9]))), lambda a: a % 2.5, lambda a: np.remainder(a, 2.5)),
    OpCase("atan2", "plain", args(normal(2, 3), normal(2, 3)), numdiff.atan2, np.arctan2),
    OpCase("atan2", "broadcast-method", args(normal(2, 3), normal(3)), lambda a, b: a.atan2(b), np.arctan2),
    OpCase("hypot", "plain", args(away_from_zero(2, 3), normal(2, 3)), numdiff.hypot, np.hypot),
    OpCase("logaddexp", "plain", args(normal(2, 3), normal(2, 3)), numdiff.logaddexp, np.logaddexp),
    OpCase(
        "xlogy", "plain", args(normal(2, 3), uniform(0.3, 3.0, 2, 3)), numdiff.xlogy, lambda x, y: x * np.log(y),
    ),
    OpCase(
        None, "lerp-scalar-weight", args(normal(2, 3), normal(2, 3)), lambda a, b: numdiff.lerp(a, b, 0.3),
        lambda a, b: a + 0.3 * (b - a),
    ),
    OpCase(
        None, "lerp-tensor-weight", args(normal(2, 3), normal(2, 3), uniform(0.0, 1.0, 3)),
        lambda a, b, w: a.lerp(b, w), lambda a, b, w: a + w * (b - a),
    ),
    OpCase(
        None, "nan_to_num-finite", args(normal(2, 3)), lambda x: numdiff.nan_to_num(x) * 2.0, lambda x: x * 2.0,
    ),
    OpCase(None, "clamp_min", args(away_from_zero(2, 3)), lambda x: x.clamp_min(0.0), lambda x: np.maximum(x, 0.0)),
    # roundings: inputs a quarter away from any integer or half, where central differences see 0
    OpCase("floor", "plain", args(constant(np.array([-2.3, -0.8, 0.2, 1.7, 3.2]))), numdiff.floor, np.floor),
    OpCase("ceil", "plain", args(constant(np.array([-2.3, -0.8, 0.2, 1.7, 3.2]))), lambda x: x.ceil(), np.ceil),
    OpCase("trunc", "plain", args(constant(np.array([-2.3, -0.8, 0.2, 1.7, 3.2]))), numdiff.trunc, np.trunc),
    OpCase("round", "plain", args(constant(np.array([-2.3, -0.8, 0.2, 1.7, 3.2]))), lambda x: x.round(), np.round),
    OpCase(
        "round", "decimals", args(constant(np.array([-2.33, -0.81, 0.27, 1.74]))),
        lambda x: numdiff.round(x, decimals=1), lambda x: np.round(x * 10.0) / 10.0,
    ),
    OpCase("frac", "plain", args(constant(np.array([-2.3, -0.8, 0.2, 1.7, 3.2]))), numdiff.frac, lambda x: x - np.trunc(x)),
    # ------------------------------------------------------------------ activations
    OpCase("relu", "plain", args(away_from_zero(2, 3)), numdiff.relu, lambda x: np.maximum(x, 0)),
    OpCase(
        "leaky_relu",
        "slope",
        args(away_from_zero(2, 3)),
        lambda x: numdiff.nn.functional.leaky_relu(x, 0.1),
        lambda x: np.where(x > 0, x, 0.1 * x),
    ),
    OpCase(
        "elu",
        "alpha",
        args(away_from_zero(2, 3)),
        lambda x: numdiff.nn.functional.elu(x, alpha=0.7),
        lambda x: np.where(x > 0, x, 0.7 * np.expm1(x)),
    ),
    OpCase(
        "softplus",
        "default",
        args(normal(2, 3)),
        numdiff.nn.functional.softplus,
        lambda x: _softplus(x, 1.0, 20.0),
    ),
    OpCase(
        "softplus",
        "beta-threshold",
        args(constant(np.array([-2.0, -0.4, 0.3, 0.8, 1.2, 2.5]))),
        lambda x: numdiff.nn.functional.softplus(x, beta=2.0, threshold=2.0),
        lambda x: _softplus(x, 2.0, 2.0),
    ),
    OpCase(
        "gelu",
        "erf",
        args(normal(2, 3)),
        numdiff.nn.functional.gelu,
        lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    ),
    OpCase(
        "gelu_tanh",
        "plain",
        args(normal(2, 3)),
        lambda x: numdiff.nn.functional.gelu(x, approximate="tanh"),
        _gelu_tanh,
    ),
    OpCase("silu", "plain", args(normal(2, 3)), nf.silu, lambda x: x / (1 + np.exp(-x))),
    OpCase("mish", "plain", args(normal(2, 3)), nf.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    OpCase(
        "hardswish", "plain", args(constant(np.array([-4.0, -2.2, -0.7, 0.4, 2.5, 3.6]))), nf.hardswish,
        lambda x: x * np.clip(x + 3, 0, 6) / 6,
    ),
    OpCase(
        "hardsigmoid", "plain", args(constant(np.array([-4.0, -2.2, -0.7, 0.4, 2.5, 3.6]))), nf.hardsigmoid,
        lambda x: np.clip(x + 3, 0, 6) / 6,
    ),
    OpCase(
        "hardtanh", "bounds", args(constant(np.array([-2.5, -1.2, -0.3, 0.4, 1.6, 2.8]))),
        lambda x: nf.hardtanh(x, -2.0, 2.0), lambda x: np.clip(x, -2.0, 2.0),
    ),
    OpCase(
        "hardtanh", "relu6", args(constant(np.array([-1.5, 0.4, 3.2, 5.8, 6.5]))), nf.relu6, lambda x: np.clip(x, 0, 6),
    ),
    OpCase("logsigmoid", "plain", args(uniform(-30, 30, 2, 3)), nf.logsigmoid, lambda x: -np.logaddexp(0, -x)),
    OpCase(
        "selu", "plain", args(away_from_zero(2, 3)), nf.selu,
        lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
    ),
    OpCase(
        "celu", "alpha", args(away_from_zero(2, 3)), lambda x: nf.celu(x, 0.6),
        lambda x: np.where(x > 0, x, 0.6 * np.expm1(x / 0.6)),
    ),
    OpCase("softsign", "plain", args(normal(2, 3)), nf.softsign, lambda x: x / (1 + np.abs(x))),
    OpCase(
        "softshrink", "lambd", args(constant(np.array([-2.5, -0.9, -0.3, 0.4, 1.6]))), lambda x: nf.softshrink(x, 0.7),
        lambda x: np.where(x > 0.7, x - 0.7, np.where(x < -0.7, x + 0.7, 0.0)),
    ),
    OpCase(
        "hardshrink", "lambd", args(constant(np.array([-2.5, -0.9, -0.3, 0.4, 1.6]))), lambda x: nf.hardshrink(x, 0.7),
        lambda x: np.where(np.abs(x) > 0.7, x, 0.0),
    ),
    OpCase("tanhshrink", "plain", args(normal(2, 3)), nf.tanhshrink, lambda x: x - np.tanh(x)),
    OpCase(
        "threshold", "plain", args(constant(np.array([-2.5, -0.9, 0.2, 0.4, 1.6]))), lambda x: nf.threshold(x, 0.3, -1.0),
        lambda x: np.where(x > 0.3, x, -1.0),
    ),
    OpCase(None, "glu", args(normal(2, 4)), nf.glu, lambda x: x[:, :2] / (1 + np.exp(-x[:, 2:]))),
    OpCase(
        "prelu", "per-channel", args(away_from_zero(2, 3, 2), normal(3)), nf.prelu,
        lambda x, w: np.where(x > 0, x, w.reshape(1, 3, 1) * x),
    ),
    OpCase("prelu", "one-slope", args(away_from_zero(4, 3), normal(1)), nf.prelu, lambda x, w: np.where(x > 0, x, w * x)),
    OpCase(None, "rot90", args(normal(2, 3, 2)), lambda x: numdiff.rot90(x, 1, (1, 2)) * 2.0, lambda x: np.rot90(x, 1, (1, 2)) * 2.0),
    OpCase(
        None, "tensor_split", args(normal(5, 2)), lambda x: numdiff.tensor_split(x, 2),
        lambda x: tuple(np.array_split(x, 2)),
    ),
    OpCase(
        None, "std_mean", args(normal(3, 4)), lambda x: numdiff.std_mean(x, 1),
        lambda x: (x.std(1, ddof=1), x.mean(1)),
    ),
    OpCase(
        None, "dist", args(normal(3, 4), normal(4)), lambda a, b: numdiff.dist(a, b, 3),
        lambda a, b: (np.abs(a - b) ** 3).sum() ** (1 / 3),
    ),
    OpCase(
        None, "softmin", args(normal(2, 3)), lambda x: nf.softmin(x, 1),
        lambda x: np.exp(-x) / np.exp(-x).sum(1, keepdims=True),
    ),
    # ------------------------------------------------------------------ reductions
    OpCase("sum", "all", args(normal(2, 3)), lambda x: x.sum(), np.sum),
    OpCase("sum", "dim", args(normal(2, 3, 2)), lambda x: x.sum(1), lambda x: x.sum(axis=1)),
    OpCase(
        "sum",
        "dims-keepdim",
        args(normal(2, 3, 2)),
        lambda x: x.sum((0, 2), keepdim=True),
        lambda x: x.sum(axis=(0, 2), keepdims=True),
    ),
    OpCase("prod", "all", args(uniform(0.5, 1.5, 2, 3)), lambda x: x.prod(), np.prod),
    OpCase("prod", "dim", args(away_from_zero(3, 4, low=0.5)), lambda x: x.prod(1), lambda x: x.prod(axis=1)),
    OpCase(
        "prod",
        "dim-with-zero",
        args(constant(np.array([[1.5, 0.0, -2.0], [0.7, 1.2, 0.9]]))),
        lambda x: x.prod(1, keepdim=True),
        lambda x: x.prod(axis=1, keepdims=True),
    ),
    OpCase(
        "prod",
        "all-with-zero",
        args(constant(np.array([[0.5, -1.3], [0.0, 2.0]]))),
        lambda x: x.prod(),
        np.prod,
    ),
    OpCase("amax", "dim", args(distinct(3, 4)), lambda x: x.amax(1), lambda x: x.max(axis=1)),
    OpCase("amax", "all", args(distinct(2, 3)), lambda x: numdiff.amax(x), np.max),
    OpCase(
        "amin",
        "dims-keepdim",
        args(distinct(2, 3, 2)),
        lambda x: x.amin((0, 2), keepdim=True),
        lambda x: x.min(axis=(0, 2), keepdims=True),
    ),
    OpCase("amin", "min-all", args(distinct(5)), lambda x: x.min(), np.min),
    # ------------------------------------------------------------------ shape
    OpCase("reshape", "plain", args(normal(3, 4)), lambda x: x.reshape(2, 6), lambda x: x.reshape(2, 6)),
    OpCase("reshape", "view-infer", args(normal(2, 6)), lambda x: x.view(-1, 3), lambda x: x.reshape(-1, 3)),
    OpCase(
        "permute",
        "plain",
        args(normal(2, 3, 4)),
        lambda x: x.permute(2, 0, 1),
        lambda x: x.transpose(2, 0, 1),
    ),
    OpCase("permute", "transpose", args(normal(2, 3)), lambda x: x.T, lambda x: x.T),
    OpCase(
        "expand",
        "plain",
        args(normal(3, 1)),
        lambda x: x.expand(2, 3, 4),
        lambda x: np.broadcast_to(x, (2, 3, 4)),
    ),
    OpCase("flip", "dims", args(normal(2, 3, 2)), lambda x: x.flip((0, 2)), lambda x: np.flip(x, (0, 2))),
    OpCase("roll", "one-dim", args(normal(3, 4)), lambda x: x.roll(1, 1), lambda x: np.roll(x, 1, 1)),
    OpCase(
        "roll",
        "two-dims-negative",
        args(normal(2, 3, 5)),
        lambda x: x.roll((-2, 4), (2, 0)),
        lambda x: np.roll(x, (-2, 4), (2, 0)),
    ),
    OpCase(
        "cat",
        "dim1",
        args(normal(2, 1), normal(2, 3), normal(2, 2)),
        lambda a, b, c: numdiff.cat([a, b, c], 1),
        lambda a, b, c: np.concatenate([a, b, c], 1),
    ),
    OpCase(
        "cat",
        "one-constant",
        args(normal(2, 2), Const(np.ones((1, 2)))),
        lambda a, b: numdiff.cat([a, b]),
        lambda a, b: np.concatenate([a, b]),
    ),
    # ------------------------------------------------------------------ indexing
    OpCase("getitem", "basic", args(normal(3, 4)), lambda x: x[1:, ::2], lambda x: x[1:, ::2]),
    OpCase(
        "getitem",
        "int-and-newaxis",
        args(normal(2, 3, 4)),
        lambda x: x[..., None, 1],
        lambda x: x[..., None, 1],
    ),
    OpCase(
        "getitem",
        "repeated-int-array",
        args(normal(3, 4)),
        lambda x: x[numdiff.tensor(INT_INDEX)],
        lambda x: x[INT_INDEX],
    ),
    OpCase(
        "getitem",
        "bool-mask",
        args(normal(3, 4)),
        lambda x: x[numdiff.tensor(BOOL_MASK)],
        lambda x: x[BOOL_MASK],
    ),
    OpCase(
        "index_add_into_zeros",
        "repeats",
        args(normal(4, 2)),
        lambda g: OPS["index_add_into_zeros"].apply(g, key=(INT_INDEX,), shape=(3, 2)),
        lambda g: _index_add_into_zeros(g, (INT_INDEX,), (3, 2)),
    ),
    OpCase(
        "index_put",
        "broadcast-slice",
        args(normal(3, 4), normal(4)),
        _setitem(slice(1, 3)),
        lambda x, v: _set(x, slice(1, 3), v),
    ),
    OpCase(
        "index_put",
        "int-array",
        args(normal(4, 3), normal(2, 3)),
        _setitem(numdiff.tensor([3, 0])),
        lambda x, v: _set(x, np.array([3, 0]), v),
    ),
    OpCase(
        "index_put",
        "number",
        args(normal(2, 3)),
        lambda x: _setitem((0, 1))(x, 7.0),
        lambda x: _set(x, (0, 1), 7.0),
    ),
    OpCase(
        "gather",
        "dim1",
        args(normal(3, 4), constant(GATHER_INDEX)),
        lambda x, i: numdiff.gather(x, 1, i),
        lambda x, i: np.take_along_axis(x, i, 1),
    ),
    OpCase(
        "scatter_add",
        "dim1",
        args(normal(3, 4), constant(GATHER_INDEX), normal(3, 2)),
        lambda x, i, s: numdiff.scatter_add(x, 1, i, s),
        lambda x, i, s: _scatter_add(x, 1, i, s),
    ),
    OpCase(
        "scatter_add",
        "dim0-src-larger",
        args(normal(3, 2), constant(np.array([[2, 0], [2, 1]])), normal(3, 2)),
        lambda x, i, s: x.scatter_add(0, i, s),
        lambda x, i, s: _scatter_add(x, 0, i, s),
    ),
    # ------------------------------------------------------------------ selection
    OpCase(
        "where",
        "broadcast",
        args(constant(np.array([[True], [False]])), normal(2, 3), normal(3)),
        numdiff.where,
        np.where,
    ),
    OpCase(
        "where",
        "scalar-other",
        args(constant(np.array([True, False, True])), normal(3)),
        lambda c, a: numdiff.where(c, a, 0.5),
        lambda c, a: np.where(c, a, 0.5),
    ),
    OpCase(
        "keep_where",
        "nan-to-num",
        args(normal(5), Const(np.array([0.0, np.nan, np.inf, 0.0, -np.inf]))),
        lambda x, c: numdiff.nan_to_num(x + c, nan=2.0, posinf=7.0),
        lambda x, c: np.nan_to_num(x + c, nan=2.0, posinf=7.0, neginf=np.finfo(np.float64).min),
    ),
    OpCase(
        "keep_where",
        "nansum",
        args(normal(3, 4)),
        lambda x: numdiff.nansum(x, 1),
        lambda x: np.nansum(x, 1),
    ),
    OpCase(
        "maximum",
        "broadcast",
        args(distinct(3, 4), lambda rng: distinct(4)(rng) + 0.125),
        numdiff.maximum,
        np.maximum,
    ),
    OpCase(
        "minimum",
        "broadcast",
        args(distinct(3, 4), lambda rng: distinct(4)(rng) + 0.125),
        numdiff.minimum,
        np.minimum,
    ),
    OpCase(
        "clamp",
        "both",
        args(constant(np.array([-1.5, -0.7, -0.2, 0.3, 0.8, 1.4]))),
        lambda x: x.clamp(-0.5, 1.0),
        lambda x: np.clip(x, -0.5, 1.0),
    ),
    OpCase(
        "clamp",
        "min-only",
        args(away_from_zero(2, 3)),
        lambda x: numdiff.clamp(x, min=0.0),
        lambda x: np.maximum(x, 0.0),
    ),
    # ------------------------------------------------------------------ conversions
    OpCase(
        "to_dtype",
        "float32",
        args(uniform(-2, 2, 2, 3)),
        lambda x: x.float(),
        lambda x: x.astype(np.float32),
        tolerances=dict(eps=1e-3, atol=1e-4, rtol=1e-3),
        forward_rtol=0,
        forward_atol=0,
        # gradgradcheck would differentiate w.r.t. a float32 grad_output numerically; the
        # round-trip case below checks the second order through to_dtype in float64.
        second_order=False,
    ),
    OpCase(
        "to_dtype",
        "round-trip",
        args(uniform(-2, 2, 3)),
        lambda x: x.to(numdiff.float32).double() * x,
        lambda x: x.astype(np.float32).astype(np.float64) * x,
        tolerances=dict(eps=1e-3, atol=1e-4, rtol=1e-3),
        forward_rtol=0,
        forward_atol=0,
    ),
    OpCase(
        "to_device",
        "cpu",
        args(normal(2, 3)),
        lambda x: numdiff.ops.conversion.to_device_op(x, numdiff.device("cpu")) * 2,
        lambda x: x * 2,
    ),
    OpCase("clone", "plain", args(normal(2, 3)), lambda x: x.clone(), lambda x: x.copy()),
    # ------------------------------------------------------------------ composed public functions
    OpCase(
        None,
        "mean-dim",
        args(normal(3, 4)),
        lambda x: x.mean(1),
        lambda x: x.mean(axis=1),
        forward_rtol=1e-10,
    ),
    OpCase(
        None,
        "var-dim",
        args(normal(3, 4)),
        lambda x: x.var(0),
        lambda x: x.var(axis=0, ddof=1),
        forward_rtol=1e-10,
    ),
    OpCase(
        None,
        "std-all-unbiased-false",
        args(normal(2, 3)),
        lambda x: x.std(unbiased=False),
        lambda x: x.std(),
        forward_rtol=1e-10,
    ),
    OpCase(
        None,
        "logsumexp",
        args(normal(3, 4)),
        lambda x: x.logsumexp(1),
        lambda x: _logsumexp(x, 1),
        forward_rtol=1e-10,
    ),
    OpCase(
        None,
        "logsumexp-large",
        args(lambda rng: rng.standard_normal((2, 3)) + 800.0),
        lambda x: numdiff.logsumexp(x, 0, keepdim=True),
        lambda x: _logsumexp(x, 0, keepdim=True),
        forward_rtol=1e-10,
    ),
    OpCase(
        "softmax",
        "last-dim",
        args(normal(2, 4)),
        lambda x: numdiff.softmax(x, -1),
        lambda x: _softmax(x, -1),
        forward_rtol=1e-10,
    ),
    OpCase(
        "softmax",
        "dim0-large",
        args(lambda rng: rng.standard_normal((3, 2, 2)) * 3 + 900.0),
        lambda x: numdiff.softmax(x, 0),
        lambda x: _softmax(x, 0),
        forward_rtol=1e-10,
    ),
    OpCase(
        "log_softmax",
        "dim0",
        args(normal(3, 2)),
        lambda x: numdiff.log_softmax(x, 0),
        lambda x: np.log(_softmax(x, 0)),
        forward_rtol=1e-10,
    ),
    OpCase(
        "log_softmax",
        "large-last-dim",
        args(lambda rng: rng.standard_normal((2, 4)) * 3 + 900.0),
        lambda x: numdiff.log_softmax(x, -1),
        lambda x: np.log(_softmax(x, -1)),
        forward_rtol=1e-10,
    ),
    OpCase(
        None,
        "stack",
        args(normal(2, 3), normal(2, 3)),
        lambda a, b: numdiff.stack([a, b], 1),
        lambda a, b: np.stack([a, b], 1),
    ),
    OpCase(None, "split", args(normal(5, 2)), lambda x: x.split(2), lambda x: tuple(np.split(x, [2, 4]))),
    OpCase(
        None,
        "chunk",
        args(normal(2, 5)),
        lambda x: numdiff.chunk(x, 2, dim=1),
        lambda x: tuple(np.split(x, [3], axis=1)),
    ),
    OpCase(None, "repeat", args(normal(2, 1)), lambda x: x.repeat(2, 1, 3), lambda x: np.tile(x, (2, 1, 3))),
    OpCase(
        None,
        "squeeze-unsqueeze",
        args(normal(2, 1, 3)),
        lambda x: x.squeeze(1).unsqueeze(0),
        lambda x: x.reshape(1, 2, 3),
    ),
    OpCase(
        None,
        "flatten-unflatten",
        args(normal(2, 3, 2)),
        lambda x: x.flatten(1).unflatten(0, (1, 2)),
        lambda x: x.reshape(1, 2, 6),
    ),
    OpCase(
        None,
        "transpose-contiguous",
        args(normal(2, 3, 2)),
        lambda x: x.transpose(0, 2).contiguous(),
        lambda x: x.swapaxes(0, 2),
    ),
    OpCase(
        None,
        "index_select",
        args(normal(3, 4)),
        lambda x: x.index_select(1, numdiff.tensor([3, 0, 3])),
        lambda x: x[:, [3, 0, 3]],
    ),
    OpCase(
        None,
        "max-dim-values-indices",
        args(distinct(3, 4)),
        lambda x: x.min(1, keepdim=True)[0],
        lambda x: x.min(axis=1, keepdims=True),
    ),
    OpCase(
        None,
        "clamp-tensor-bounds",
        args(distinct(2, 3), Const(np.full(3, -0.3)), Const(np.full((2, 1), 0.4))),
        lambda x, lo, hi: x.clamp(lo, hi),
        lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
    ),
    OpCase(
        None,
        "masked_fill",
        args(normal(3, 4)),
        lambda x: x.masked_fill(numdiff.tensor(BOOL_MASK), -1.0),
        lambda x: np.where(BOOL_MASK, -1.0, x),
    ),
    OpCase(
        None,
        "broadcast_to",
        args(normal(3)),
        lambda x: numdiff.broadcast_to(x, (2, 3)),
        lambda x: np.broadcast_to(x, (2, 3)),
    ),
]


def all_cases() -> list[OpCase]:
    """`CORE_CASES` plus the `CASES` of every tests/ops/cases_*.py module."""
    cases = list(CORE_CASES)
    for path in sorted(Path(__file__).parent.glob("cases_*.py")):
        module = importlib.import_module(f"{__package__}.{path.stem}")
        cases.extend(module.CASES)
    return cases


def recorded_ops(outputs: Any) -> set[str]:
    """The registered names of every op recorded in the graph behind `outputs`."""
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    stack = [o.grad_fn for o in outputs if isinstance(o, numdiff.Tensor) and o.grad_fn is not None]
    seen: set = set()
    names = set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        function = getattr(node, "function", None)
        if function is not None and getattr(function, "op_name", None) is not None:
            names.add(function.op_name)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return names


def case_rng(case: OpCase) -> np.random.Generator:
    """A generator seeded from the case's id, so each case sees the same inputs on every run."""
    return np.random.default_rng(zlib.crc32(case.id.encode()))
