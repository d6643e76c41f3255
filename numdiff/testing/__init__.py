"""numdiff.testing, as torch.testing: ``assert_close`` compares tensors (and numbers, sequences
and mappings of them) with tolerances that depend on the dtype, and ``make_tensor`` builds test
inputs of a shape, dtype and range."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from numdiff import _dtype, creation
from numdiff.backend import is_numpy
from numdiff.tensor import Tensor

# (rtol, atol) by dtype, PyTorch's defaults; integers and bool compare exactly.
_TOLERANCES = {
    _dtype.float16: (1e-3, 1e-5), _dtype.bfloat16: (1.6e-2, 1e-5),
    _dtype.float32: (1.3e-6, 1e-5), _dtype.float64: (1e-7, 1e-7),
}  # fmt: skip


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True, check_dtype: bool = True,
                 check_layout: bool = True, check_stride: bool = False, msg: Any = None) -> None:  # fmt: skip
    """Raise AssertionError unless `actual` and `expected` are close: |a - e| <= atol + rtol * |e|
    elementwise, with the same shape (and dtype and device unless told not to check)."""
    if (rtol is None) != (atol is None):
        raise ValueError("assert_close: give both rtol and atol, or neither")
    _compare(actual, expected, "", rtol, atol, equal_nan, check_device, check_dtype, msg, check_stride)


def _compare(actual: Any, expected: Any, where: str, rtol: Any, atol: Any, equal_nan: bool, check_device: bool, check_dtype: bool, msg: Any,
             check_stride: bool = False) -> None:  # fmt: skip
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        if set(actual) != set(expected):
            _fail(msg, f"The keys of the mappings differ{where}: {sorted(map(str, actual))} != {sorted(map(str, expected))}")
        for key in expected:
            _compare(actual[key], expected[key], f"{where}[{key!r}]", rtol, atol, equal_nan, check_device, check_dtype, msg, check_stride)
        return
    if _is_sequence(expected) and _is_sequence(actual):
        if len(actual) != len(expected):
            _fail(msg, f"The lengths of the sequences differ{where}: {len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, f"{where}[{i}]", rtol, atol, equal_nan, check_device, check_dtype, msg, check_stride)
        return
    if is_numpy(actual) and is_numpy(expected):
        actual, expected = creation.from_numpy(actual), creation.from_numpy(expected)
    if isinstance(actual, Tensor) or isinstance(expected, Tensor) or is_numpy(actual) or is_numpy(expected):
        if not (isinstance(actual, Tensor) and isinstance(expected, Tensor)):
            # PyTorch's verdict on a tensor against a number or an array: a TypeError, not a mismatch.
            raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")
        _compare_tensors(actual, expected, where, rtol, atol, equal_nan, check_device, check_dtype, msg)
        if check_stride and actual.stride() != expected.stride():
            _fail(msg, f"The values for attribute 'stride()' do not match{where}: {actual.stride()} != {expected.stride()}.")
        return
    if isinstance(actual, (bool, int, float, np.number)) and isinstance(expected, (bool, int, float, np.number)):
        if check_dtype and type(actual) is not type(expected):
            _fail(msg, f"The types of the numbers differ{where}: {type(actual).__name__} != {type(expected).__name__}")
        a, e = np.array(actual, dtype=np.float64), np.array(expected, dtype=np.float64)
        tolerance = (rtol, atol) if rtol is not None else ((1e-7, 1e-7) if isinstance(expected, float) else (0.0, 0.0))
        _check_values(a, e, where, *tolerance, equal_nan, msg, "Scalars")
        return
    if actual != expected:
        _fail(msg, f"The values differ{where}: {actual!r} != {expected!r}")


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _compare_tensors(actual: Tensor, expected: Tensor, where: str, rtol: Any, atol: Any, equal_nan: bool, check_device: bool, check_dtype: bool, msg: Any) -> None:
    if tuple(actual.shape) != tuple(expected.shape):
        _fail(msg, f"The values for attribute 'shape' do not match{where}: {tuple(actual.shape)} != {tuple(expected.shape)}.")
    if check_device and actual.device != expected.device:
        _fail(msg, f"The values for attribute 'device' do not match{where}: {actual.device} != {expected.device}.")
    if check_dtype and actual.dtype != expected.dtype:
        _fail(msg, f"The values for attribute 'dtype' do not match{where}: {actual.dtype} != {expected.dtype}.")
    if rtol is None:
        wider = _dtype.promote(actual.dtype, expected.dtype)
        rtol, atol = _TOLERANCES.get(wider, (0.0, 0.0))
    a = actual.detach().cpu().double().numpy() if actual.is_floating_point() else actual.detach().cpu().numpy().astype(np.float64)
    e = expected.detach().cpu().double().numpy() if expected.is_floating_point() else expected.detach().cpu().numpy().astype(np.float64)
    _check_values(a, e, where, rtol, atol, equal_nan, msg, "Tensor-likes")


def _check_values(a: np.ndarray, e: np.ndarray, where: str, rtol: float, atol: float, equal_nan: bool, msg: Any, kind: str) -> None:
    with np.errstate(invalid="ignore", divide="ignore"):
        close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan) | ((a == e) & np.isinf(e))
        if close.all():
            return
        absolute = np.where(close, -np.inf, np.abs(a - e))
        relative = np.where(close, -np.inf, np.abs(a - e) / np.abs(e))
    worst_abs = _worst(absolute) if a.ndim else ()
    worst_rel = _worst(relative) if a.ndim else ()
    count = int((~close).sum())
    place = f" at index {tuple(int(i) for i in worst_abs)}" if a.ndim else ""
    place_rel = f" at index {tuple(int(i) for i in worst_rel)}" if a.ndim else ""
    text = (
        f"{kind} are not close!\n\nMismatched elements: {count} / {a.size} ({100 * count / max(a.size, 1):.1f}%)\n"
        f"Greatest absolute difference: {absolute[worst_abs]}{place} (up to {atol} allowed)\n"
        f"Greatest relative difference: {relative[worst_rel]}{place_rel} (up to {rtol} allowed)"
    ) if a.ndim else (
        f"{kind} are not close!\n\nExpected {e} but got {a}.\n"
        f"Absolute difference: {float(np.abs(a - e))} (up to {atol} allowed)\n"
        f"Relative difference: {float(np.abs(a - e) / np.abs(e)) if e != 0 else float('inf')} (up to {rtol} allowed)"
    )  # fmt: skip
    if where:
        text += f"\n\nThe failure occurred for item {where}"
    _fail(msg, text)


def _worst(differences: np.ndarray) -> tuple[int, ...]:
    """The index of the largest difference, a NaN counting as the largest (PyTorch reports it)."""
    ranked = np.where(np.isnan(differences), np.inf, differences)
    return np.unravel_index(int(np.argmax(ranked)), differences.shape)


def _fail(msg: Any, text: str) -> None:
    raise AssertionError(msg(text) if callable(msg) else (msg or text))


def make_tensor(*shape: Any, dtype: Any, device: Any = None, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False, memory_format: Any = None) -> Tensor:  # fmt: skip
    """A tensor of `shape` filled with uniform values in [low, high) (default [-9, 9); integers
    [-9, 10), bool either), as torch.testing.make_tensor."""
    size = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else tuple(shape)
    target = _dtype.to_dtype(dtype)
    if low is not None and high is not None and low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    rng = np.random.default_rng()
    if target is _dtype.bool_:
        values = rng.random(size) < 0.5
    elif not target.is_floating_point:
        lo, hi = int(-9 if low is None else low), int(10 if high is None else high)
        values = rng.integers(max(lo, 0) if not target.is_signed else lo, hi, size=size)
    else:
        lo, hi = -9.0 if low is None else low, 9.0 if high is None else high
        values = rng.uniform(lo, hi, size=size)
    if exclude_zero:
        values = np.where(values == 0, 1 if not target.is_floating_point else np.finfo(np.float32).tiny, values)
    return creation.tensor(values, dtype=target, device=device, requires_grad=requires_grad)


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """The deprecated spelling of assert_close (no dtype check, NaNs equal), kept for old tests."""
    if not isinstance(actual, Tensor):
        actual = creation.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = creation.tensor(expected, dtype=actual.dtype)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False, msg=msg or None)


__all__ = ["assert_allclose", "assert_close", "make_tensor"]


def __dir__() -> list[str]:
    return sorted(__all__)
