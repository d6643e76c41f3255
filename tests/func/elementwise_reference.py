"""Helpers for testing @numdiff.elementwise against torch: functions built from source text, and
torch autograd running the same Python function per element (0-d tensors, so Python's if,
ternaries and returns take the branch of each point, as the @elementwise kernel does)."""

from __future__ import annotations

import importlib.util
import math
import tempfile
import types
from pathlib import Path

import numpy as np
import torch

import numdiff

_FOLDER = Path(tempfile.mkdtemp(prefix="numdiff_elementwise_tests_"))
_count = 0


def define(source: str) -> dict[str, types.FunctionType]:
    """The functions defined by `source` (a module with ``import math`` prepended), from a file so
    that @elementwise can read their source."""
    global _count
    _count += 1
    path = _FOLDER / f"generated_{_count}.py"
    path.write_text("import math\n\n" + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {k: v for k, v in vars(module).items() if isinstance(v, types.FunctionType)}


def _log(x, base=None):
    return torch.log(x) if base is None else torch.log(x) / torch.log(base)


def _on_tensors(function):
    """`function` taking Python numbers too (a constant subexpression such as math.erfinv(2.0))."""

    def wrapped(*args):
        return function(*(a if isinstance(a, torch.Tensor) else torch.tensor(float(a), dtype=torch.float64) for a in args))

    return wrapped


_TORCH_FUNCTIONS = dict(
    exp=torch.exp, expm1=torch.expm1, exp2=torch.exp2, log1p=torch.log1p, log2=torch.log2,
    log10=torch.log10, sqrt=torch.sqrt, sin=torch.sin, cos=torch.cos, tan=torch.tan, asin=torch.asin,
    acos=torch.acos, atan=torch.atan, sinh=torch.sinh, cosh=torch.cosh, tanh=torch.tanh, asinh=torch.asinh,
    acosh=torch.acosh, atanh=torch.atanh, erf=torch.erf, erfc=torch.erfc, erfinv=torch.erfinv,
    lgamma=torch.lgamma, digamma=torch.digamma, fabs=torch.abs, floor=torch.floor, ceil=torch.ceil,
    trunc=torch.trunc, pow=torch.pow, atan2=torch.atan2, hypot=torch.hypot,
    degrees=torch.rad2deg, radians=torch.deg2rad, isnan=torch.isnan, isinf=torch.isinf, isfinite=torch.isfinite,
    i0=torch.special.i0, i0e=torch.special.i0e, i1=torch.special.i1, i1e=torch.special.i1e, erfcx=torch.special.erfcx,
)  # fmt: skip
TORCH_MATH = types.SimpleNamespace(
    pi=math.pi, e=math.e, tau=math.tau, inf=math.inf, nan=math.nan, log=_on_tensors(_log),
    **{name: _on_tensors(f) for name, f in _TORCH_FUNCTIONS.items()},
)


def as_torch(fn: types.FunctionType) -> types.FunctionType:
    """`fn` with math, abs, min and max meaning torch's functions (min/max as torch.minimum/maximum)."""
    namespace = {**fn.__globals__, "math": TORCH_MATH, "abs": _on_tensors(torch.abs),
                 "min": _on_tensors(torch.minimum), "max": _on_tensors(torch.maximum)}
    return types.FunctionType(fn.__code__, namespace, fn.__name__, None, fn.__closure__)


def torch_values_and_grads(fn: types.FunctionType, *columns: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """fn's value and its gradient with respect to each argument at each point, by torch autograd
    on 0-d float64 tensors."""
    torch_fn = as_torch(fn)
    values, grads = [], [[] for _ in columns]
    for point in zip(*columns):
        inputs = [torch.tensor(float(v), dtype=torch.float64, requires_grad=True) for v in point]
        out = torch_fn(*inputs)
        if not isinstance(out, torch.Tensor) or not out.requires_grad:
            values.append(float(out))
            for g in grads:
                g.append(0.0)
            continue
        parts = torch.autograd.grad(out, inputs, allow_unused=True)
        values.append(out.item())
        for g, part in zip(grads, parts):
            g.append(0.0 if part is None else part.item())
    return np.array(values), [np.array(g) for g in grads]


def numdiff_values_and_grads(op, *columns: np.ndarray, dtype=numdiff.float64) -> tuple[np.ndarray, list[np.ndarray]]:
    """op's values and gradients at the points (one tensor per argument), through backward()."""
    inputs = [numdiff.tensor(np.asarray(c), dtype=dtype, requires_grad=True) for c in columns]
    out = op(*inputs)
    out.sum().backward()
    return out.detach().numpy(), [t.grad.numpy() for t in inputs]


def mismatches(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float = 0.0) -> np.ndarray:
    """Where two arrays differ: beyond tolerance, or in their NaN and infinity pattern."""
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    both_nan = np.isnan(actual) & np.isnan(expected)
    with np.errstate(invalid="ignore"):
        close = np.isclose(actual, expected, rtol=rtol, atol=atol) | (actual == expected)
    return ~(both_nan | close)


def assert_matches(name: str, points: tuple, actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float = 0.0) -> None:
    bad = np.flatnonzero(mismatches(actual, expected, rtol, atol))
    if bad.size:
        rows = [f"  at {tuple(float(c[i]) for c in points)}: numdiff {actual[i]!r}, torch {expected[i]!r}" for i in bad[:10]]
        raise AssertionError(f"{name}: {bad.size} of {actual.size} points differ from torch\n" + "\n".join(rows))
