"""torch.testing: `assert_close` with PyTorch's per-dtype tolerances and messages, `make_tensor`.

>>> import numdiff
>>> from numdiff.testing import assert_close
>>> assert_close(numdiff.tensor([1.0, 2.0]), numdiff.tensor([1.0, 2.0 + 1e-7]))
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from numdiff.creation import rand, randint
from numdiff.creation import tensor as _tensor
from numdiff.tensor import Tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

# PyTorch's defaults (rtol, atol) per dtype name; integers and bool compare exactly.
_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}


def __dir__() -> list[str]:
    return sorted(__all__)


def _dtype_name(value: Tensor) -> str:
    return str(value.dtype).replace("numdiff.", "").replace("torch.", "")


def _tolerances(actual: Tensor, expected: Tensor, rtol: float | None, atol: float | None) -> tuple[float, float]:
    if (rtol is None) != (atol is None):
        raise ValueError(
            f"assert_close: both 'rtol' and 'atol' must be either specified or omitted, "
            f"but got no {'rtol' if rtol is None else 'atol'}."
        )
    if rtol is not None:
        return float(rtol), float(atol)
    pairs = [_TOLERANCES.get(_dtype_name(t), (0.0, 0.0)) for t in (actual, expected)]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _mismatch_message(a: np.ndarray, e: np.ndarray, bad: np.ndarray, rtol: float, atol: float) -> str:
    total, count = bad.size, int(bad.sum())
    if total == 1:
        return (
            f"Scalars are not close!\n\nExpected {e.reshape(-1)[0]} but got {a.reshape(-1)[0]}.\n"
            f"Absolute difference: {abs(a.reshape(-1)[0] - e.reshape(-1)[0])} (up to {atol} allowed)\n"
            f"Relative difference: {_relative(a, e).reshape(-1)[0]} (up to {rtol} allowed)"
        )
    with np.errstate(invalid="ignore"):
        absolute = np.where(bad, np.abs(a - e), -np.inf)
        relative = np.where(bad, _relative(a, e), -np.inf)
    worst_abs = np.unravel_index(int(np.nanargmax(absolute)), a.shape)
    worst_rel = np.unravel_index(int(np.nanargmax(relative)), a.shape)
    return (
        f"Tensor-likes are not close!\n\nMismatched elements: {count} / {total} ({100.0 * count / total:.1f}%)\n"
        f"Greatest absolute difference: {absolute[worst_abs]} at index {tuple(int(i) for i in worst_abs)} "
        f"(up to {atol} allowed)\n"
        f"Greatest relative difference: {relative[worst_rel]} at index {tuple(int(i) for i in worst_rel)} "
        f"(up to {rtol} allowed)"
    )


def _relative(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(a - e) / np.abs(e)


def _as_tensor(value: Any, like: Any) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, bool):
        return _tensor(value)
    if isinstance(value, (int, float)):
        dtype = like.dtype if isinstance(like, Tensor) and isinstance(value, float) == like.is_floating_point() else None
        return _tensor(value, dtype=dtype)
    return _tensor(np.asarray(value))


def _compare(actual: Any, expected: Any, rtol, atol, equal_nan, check_dtype, check_device, msg, path: str) -> None:
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        if set(actual) != set(expected):
            raise AssertionError(f"The keys of the mappings do not match{path}: {sorted(map(str, actual))} != "
                                 f"{sorted(map(str, expected))}.")
        for key in expected:
            _compare(actual[key], expected[key], rtol, atol, equal_nan, check_dtype, check_device, msg,
                     f"{path}[{key!r}]")
        return
    sequences = (Sequence,)
    if isinstance(expected, sequences) and isinstance(actual, sequences) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise AssertionError(f"The length of the sequences mismatch{path}: {len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, rtol, atol, equal_nan, check_dtype, check_device, msg, f"{path}[{i}]")
        return
    both_numbers = not isinstance(actual, Tensor) and not isinstance(expected, Tensor)
    if isinstance(actual, Tensor) != isinstance(expected, Tensor) and not both_numbers:
        raise AssertionError(
            f"assert_close: expected{path} is a {type(expected).__name__} but actual is a {type(actual).__name__}; "
            "compare a tensor with a tensor (or numbers with numbers)"
        )
    a_t, e_t = _as_tensor(actual, expected), _as_tensor(expected, actual)
    checks = [("shape", tuple(a_t.shape), tuple(e_t.shape))]
    if check_device:
        checks.append(("device", a_t.device, e_t.device))
    if check_dtype and not both_numbers:
        checks.append(("dtype", a_t.dtype, e_t.dtype))
    for attribute, got, want in checks:
        if got != want:
            raise AssertionError(_with_msg(msg, f"The values for attribute '{attribute}' do not match{path}: "
                                                f"{got} != {want}."))
    r, t = _tolerances(a_t, e_t, rtol, atol)
    a = a_t.detach().cpu().numpy().astype(np.float64)
    e = e_t.detach().cpu().numpy().astype(np.float64)
    with np.errstate(invalid="ignore"):
        close = (a == e) | (np.abs(a - e) <= t + r * np.abs(e))
    if equal_nan:
        close |= np.isnan(a) & np.isnan(e)
    if not close.all():
        raise AssertionError(_with_msg(msg, _mismatch_message(a, e, ~close, r, t) +
                                       (f"\n\nThe failure occurred for item {path}" if path else "")))


def _with_msg(msg: Any, default: str) -> str:
    if msg is None:
        return default
    return msg(default) if callable(msg) else str(msg)


def assert_close(
    actual: Any,
    expected: Any,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg: Any = None,
) -> None:
    """Raise AssertionError unless `actual` and `expected` are close: ``|a - e| <= atol + rtol * |e|``.

    Tensors, Python numbers and (nested) sequences or mappings of them are compared element by
    element; shape, device and dtype must match. Without `rtol`/`atol`, PyTorch's defaults for
    the dtype apply (float32: 1.3e-6 and 1e-5; float64: 1e-7 and 1e-7; integers: exact).

    >>> import numdiff
    >>> numdiff.testing.assert_close(numdiff.tensor([1.0]), numdiff.tensor([1.1]), rtol=0.2, atol=0.0)
    """
    _compare(actual, expected, rtol, atol, equal_nan, check_dtype, check_device, msg, "")


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
                    equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated in PyTorch in favour of `assert_close`: `expected` takes `actual`'s dtype, and NaNs
    compare equal by default.

    >>> import numdiff
    >>> numdiff.testing.assert_allclose(numdiff.tensor([1.0, float("nan")]), [1.0, float("nan")])
    """
    warnings.warn("numdiff.testing.assert_allclose() is deprecated, as in PyTorch; use assert_close() instead.",
                  FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = _tensor(np.asarray(actual))
    expected = expected.to(actual.dtype) if isinstance(expected, Tensor) else _tensor(np.asarray(expected),
                                                                                      dtype=actual.dtype)
    _compare(actual, expected, rtol, atol, equal_nan, True, True, msg or None, "")


def make_tensor(
    *shape: Any,
    dtype: Any,
    device: Any = None,
    low: float | None = None,
    high: float | None = None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
) -> Tensor:
    """A tensor of `shape` filled uniformly from [low, high) (PyTorch's default range is [-9, 9]),
    drawn from numdiff's global generator.

    >>> import numdiff
    >>> numdiff.testing.make_tensor(2, 3, dtype=numdiff.float32, low=0, high=1).shape
    numdiff.Size([2, 3])
    """
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = tuple(shape[0])
    low = -9.0 if low is None else float(low)
    high = 9.0 if high is None else float(high)
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ValueError(f"make_tensor: low={low} and high={high} must be finite with low <= high")
    size = tuple(int(s) for s in shape)
    if _tensor(0, dtype=dtype).is_floating_point():
        out = (rand(size, dtype=dtype) * (high - low) + low).to(device or "cpu")
    else:
        out = randint(math.ceil(low), max(math.ceil(low) + 1, math.ceil(high)), size, dtype=dtype, device=device)
    if exclude_zero:
        out = out.masked_fill(out == 0, 1)
    if noncontiguous and out.numel() > 1:
        out = out.repeat_interleave(2, dim=-1)[..., ::2]
    return out.requires_grad_(requires_grad) if out.is_floating_point() else out
