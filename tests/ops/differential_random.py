"""Randomly drawn differential cases: an op from the populations of tests/ops/differential.py,
operands of random dtypes and broadcast-compatible shapes (empty and 0-d ones included), values
with zeros, negatives, NaN and infinities, and layouts that are transposed, sliced with a step or
expanded. `random_cases(seed, count)` gives the same cases for the same seed; tools/
torch_differential.py --random N draws more."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from tests.ops.differential import BINARY, BINARY_WITH_SCALAR, DTYPES, REDUCTIONS, UNARY, Case

_SPECIALS = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 127.0, 300.0, np.nan, np.inf, -np.inf])


def _shape_pair(rng: np.random.Generator) -> tuple[tuple, tuple]:
    """Two shapes that broadcast: sizes 0 to 3, some dims 1 or dropped on one side."""
    ndim = int(rng.integers(0, 4))
    shape = tuple(int(n) for n in rng.integers(0, 4, ndim))
    other = list(shape)
    for d in range(ndim):
        if rng.random() < 0.3:
            other[d] = 1
    drop = int(rng.integers(0, ndim + 1)) if ndim else 0
    return shape, tuple(other[drop:])


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("uint8", "int8", "int16", "int32", "int64"):
        low = 0 if dtype == "uint8" else -9
        return rng.integers(low, 10, shape)
    return np.where(rng.random(shape) < 0.3, rng.choice(_SPECIALS, shape), np.round(rng.normal(0, 3, shape), 2))


def _tensor(lib: Any, values: np.ndarray, dtype: str) -> Any:
    return lib.tensor(values.tolist()).reshape(values.shape).to(getattr(lib, dtype))  # tolist drops empty dims


def _operand(lib: Any, values: np.ndarray, dtype: str, layout: str) -> Any:
    """`values` as a `dtype` tensor of `lib`, built so that it has `layout`."""
    if layout == "transposed" and values.ndim >= 2:
        return _tensor(lib, np.swapaxes(values, -1, -2), dtype).transpose(-1, -2)
    if layout == "strided" and values.ndim >= 1:
        return _tensor(lib, np.repeat(values, 2, axis=-1), dtype)[..., ::2]
    if layout == "expanded" and values.ndim >= 1 and values.shape[0] > 1:
        return _tensor(lib, values[:1], dtype).expand(*values.shape)
    return _tensor(lib, values, dtype)


def _least_precise(case: Any, *dtypes: str) -> Any:
    floats = [d for d in ("bfloat16", "float16", "float32") if d in dtypes]
    case.least_precise = floats[0] if floats else None
    return case


def random_cases(seed: int, count: int) -> Iterator[Case]:
    """`count` cases drawn from `seed`: binary ops on two tensors or a tensor and a Python number,
    unary ops, and reductions over a random dim."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        kind = rng.choice(["binary", "scalar", "unary", "reduction"])
        shape, other_shape = _shape_pair(rng)
        a, b = (str(d) for d in rng.choice(DTYPES, 2))
        layout, other_layout = (str(v) for v in rng.choice(["contiguous", "transposed", "strided", "expanded"], 2))
        x, y = _values(rng, shape, a), _values(rng, other_shape, b)
        if kind == "binary":
            op = str(rng.choice(BINARY))
            if rng.random() < 0.5:  # the broadcast-up operand on the right as often as on the left
                x, y, a, b, layout, other_layout = y, x, b, a, other_layout, layout
            name = f"#{seed}.{i} {op}({a}{list(x.shape)} {layout}, {b}{list(y.shape)} {other_layout})"
            case = lambda lib, op=op, x=x, y=y, a=a, b=b, la=layout, lb=other_layout: getattr(lib, op)(  # noqa: E731
                _operand(lib, x, a, la), _operand(lib, y, b, lb)
            )
            yield name, _least_precise(case, a, b)
        elif kind == "scalar":
            # No -0.5: torch's pow takes rsqrt for it (DECISIONS in tests/ops/differential.py).
            op, number = str(rng.choice(BINARY_WITH_SCALAR)), rng.choice([2, -3, 0, 2.5, -1.5, True, 1000, float("nan")]).item()
            name = f"#{seed}.{i} {op}({a}{list(shape)} {layout}, {number!r})"
            yield name, lambda lib, op=op, x=x, a=a, la=layout, n=number: getattr(lib, op)(_operand(lib, x, a, la), n)
        elif kind == "unary":
            op = str(rng.choice(UNARY))
            if op == "signbit" and a == "bfloat16":
                a = "float32"  # torch's float32 -> bfloat16 conversion makes NaN negative: signbit(NaN) True
            if op == "logit" and a in ("float16", "bfloat16"):
                # torch's half logit rounds x / (1 - x) to half before the log (float16 logit(0.4807):
                # -0.07764, where the float32 value rounded is -0.07721); numdiff computes in float32.
                a = "float32"
            yield f"#{seed}.{i} {op}({a}{list(shape)} {layout})", lambda lib, op=op, x=x, a=a, la=layout: getattr(lib, op)(_operand(lib, x, a, la))
        else:
            op = str(rng.choice(REDUCTIONS))
            if op in ("median", "nanmedian") and layout == "expanded":
                # torch's median of an expanded tensor is wrong: rows [1, 5] expanded to 3 give [3, 3]
                # (its in-place sort writes through the shared memory); numdiff gives [1, 5].
                layout = "contiguous"
            dim = int(rng.integers(-len(shape), len(shape))) if shape else None
            name = f"#{seed}.{i} {op}({a}{list(shape)} {layout}, dim={dim})"
            yield name, lambda lib, op=op, x=x, a=a, la=layout, d=dim: (
                getattr(lib, op)(_operand(lib, x, a, la)) if d is None else getattr(lib, op)(_operand(lib, x, a, la), d)
            )
