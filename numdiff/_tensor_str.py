"""Tensor repr in PyTorch's form: ``tensor([1., 2.], requires_grad=True)``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numdiff.tensor import Tensor

_PREFIX = "tensor("
_SUMMARIZE_ABOVE = 1000


def _float_formatter(values: np.ndarray) -> tuple:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return lambda v: _special(v) or f"{v:.4f}", 0
    magnitudes = np.abs(finite)
    if np.all(finite == np.round(finite)):
        if magnitudes.max() >= 1e8:
            return lambda v: _special(v) or f"{v:.4e}", 0
        return lambda v: _special(v) or f"{v:.0f}.", 0
    nonzero = magnitudes[magnitudes != 0]
    if nonzero.size and (
        nonzero.max() / nonzero.min() > 1000.0 or nonzero.max() > 1e8 or nonzero.min() < 1e-4
    ):
        return lambda v: _special(v) or f"{v:.4e}", 0
    return lambda v: _special(v) or f"{v:.4f}", 0


def _special(v: float) -> str | None:
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def format_data(data: np.ndarray) -> str:
    """The bracketed values, aligned like PyTorch's printout."""
    if data.dtype.kind == "f":
        shown = data if data.size <= _SUMMARIZE_ABOVE else _edges(data)
        fmt, _ = _float_formatter(shown.astype(np.float64).ravel())
        width = max((len(fmt(float(v))) for v in shown.ravel()), default=0)
        formatter = {"float_kind": lambda v: fmt(float(v)).rjust(width)}
    elif data.dtype.kind == "b":
        formatter = {"bool": lambda v: "True" if v else "False"}
    else:
        shown = data if data.size <= _SUMMARIZE_ABOVE else _edges(data)
        width = max((len(str(int(v))) for v in shown.ravel()), default=0)
        formatter = {"int": lambda v: str(int(v)).rjust(width)}
    return np.array2string(
        data,
        separator=", ",
        prefix=_PREFIX,
        formatter=formatter,
        threshold=_SUMMARIZE_ABOVE,
        edgeitems=3,
        max_line_width=80,
    )


def _edges(data: np.ndarray) -> np.ndarray:
    index = tuple(np.r_[0 : min(3, n), max(n - 3, 0) : n] for n in data.shape)
    return data[np.ix_(*index)]


def tensor_repr(t: Tensor) -> str:
    from numdiff import _dtype

    data = t.detach().cpu().numpy()
    if data.size == 0:
        body = "[]"
    else:
        body = format_data(data)
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    default = {"f": _dtype.float32, "i": _dtype.int64, "b": _dtype.bool_}.get(data.dtype.kind)
    if t.dtype is not default or data.size == 0 and t.dtype is not _dtype.float32:
        extras.append(f"dtype={t.dtype!r}")
    if data.size == 0 and data.ndim != 1:
        extras.append(f"size={tuple(data.shape)}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return _PREFIX + ", ".join([body, *extras]) + ")"
