"""Tensor repr in PyTorch's form: ``tensor([1., 2.], requires_grad=True)``.

The layout follows PyTorch's printer: one width for every element, chosen from the nonzero finite
values; floats print with 4 decimals, as integers with a trailing dot when all are whole, or in
scientific notation when their magnitudes span more than 1000x (or pass 1e8, or go under 1e-4);
more than 1000 elements are summarized with 3 items at each edge.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from numdiff import _dtype

if TYPE_CHECKING:
    from numdiff.tensor import Tensor

_PREFIX = "tensor("
_DEFAULTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
_PROFILES = {
    "default": _DEFAULTS,
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}
OPTIONS = dict(_DEFAULTS)
"""What tensors print with; numdiff.set_printoptions changes it."""


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """PyTorch's print options: decimals shown, element count above which a printout is summarized,
    items kept at each edge when it is, line width, a named `profile` ("default", "short", "full")
    to start from, and `sci_mode` (True or False forces scientific notation on or off; None chooses)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        OPTIONS.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"set_printoptions: {name} must be a number at least 0, got {value!r}")
            OPTIONS[name] = value
    OPTIONS["sci_mode"] = sci_mode


class _Formatter:
    """Formats every element of one tensor to a common width."""

    def __init__(self, shown: np.ndarray) -> None:
        self.floating = shown.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        values = shown.reshape(-1)
        if not self.floating:
            self.width = max([1, *(len(self._plain(v)) for v in values)])
            return
        values = values.astype(np.float64)
        nonzero_finite = values[np.isfinite(values) & (values != 0)]
        if nonzero_finite.size == 0:
            return
        magnitudes = np.abs(nonzero_finite)
        smallest, largest = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(nonzero_finite == np.ceil(nonzero_finite)))
        spread = largest / smallest > 1000.0 or largest > 1.0e8
        self.sci_mode = spread if self.int_mode else spread or smallest < 1.0e-4
        if OPTIONS["sci_mode"] is not None:
            self.sci_mode = bool(OPTIONS["sci_mode"])
        self.width = max(len(self._float(float(v))) for v in nonzero_finite)

    @staticmethod
    def _plain(value: object) -> str:
        return str(value.item() if isinstance(value, np.generic) else value)

    def _float(self, value: float) -> str:
        if self.sci_mode:
            return f"{value:.{OPTIONS['precision']}e}"
        if self.int_mode:
            text = f"{value:.0f}"
            return text if math.isinf(value) or math.isnan(value) else text + "."
        return f"{value:.{OPTIONS['precision']}f}"

    def format(self, value: object) -> str:
        text = self._float(float(value)) if self.floating else self._plain(value)
        return text.rjust(self.width)


def _summarized(data: np.ndarray) -> np.ndarray:
    """The elements a summarized printout shows: the edge items of every long dimension."""
    edge = OPTIONS["edgeitems"]
    for axis, n in enumerate(data.shape):
        if n > 2 * edge:
            keep = np.r_[0:edge, n - edge : n]
            data = np.take(data, keep, axis=axis)
    return data


def _vector(data: np.ndarray, indent: int, summarize: bool, formatter: _Formatter) -> str:
    per_line = max(1, (OPTIONS["linewidth"] - indent) // (formatter.width + 2))
    edge = OPTIONS["edgeitems"]
    if summarize and data.shape[0] > 2 * edge:
        items = [formatter.format(v) for v in data[:edge]] + [" ..."]
        items += [formatter.format(v) for v in data[len(data) - edge :]]
    else:
        items = [formatter.format(v) for v in data]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(data: np.ndarray, indent: int, summarize: bool, formatter: _Formatter) -> str:
    if data.ndim == 0:
        return formatter.format(data.item())
    if data.ndim == 1:
        return _vector(data, indent, summarize, formatter)
    n = data.shape[0]
    edge = OPTIONS["edgeitems"]
    if summarize and n > 2 * edge:
        rows = [_nested(data[i], indent + 1, summarize, formatter) for i in range(edge)]
        rows += ["..."] + [_nested(data[i], indent + 1, summarize, formatter) for i in range(n - edge, n)]
    else:
        rows = [_nested(data[i], indent + 1, summarize, formatter) for i in range(n)]
    return "[" + ("," + "\n" * (data.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def format_data(data: np.ndarray, indent: int = len(_PREFIX)) -> str:
    """The bracketed values, aligned like PyTorch's printout."""
    summarize = data.size > OPTIONS["threshold"]
    formatter = _Formatter(_summarized(data) if summarize else data)
    return _nested(data, indent, summarize, formatter)


def _with_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """Append ``, suffix`` items, wrapping onto a new line where one would pass the line width."""
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > OPTIONS["linewidth"]:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(parts) + ")"


def _meta_repr(t: Tensor) -> str:
    """A meta tensor has no values: PyTorch's ``tensor(..., device='meta', size=(2, 3))``."""
    extras = ["device='meta'", f"size={tuple(t.shape)}"]
    if t.dtype is not _dtype.get_default_dtype():  # int64 and bool too, unlike printed values
        extras.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return f"{_PREFIX}..., {', '.join(extras)})"


def tensor_repr(t: Tensor) -> str:
    if t.device.type == "meta":
        return _meta_repr(t)
    data = t.detach()._host_values()
    body = "[]" if data.size == 0 else format_data(data)
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    if data.size == 0 and data.ndim != 1:  # before the dtype, as PyTorch prints it
        extras.append(f"size={tuple(data.shape)}")
    default = {"f": _dtype.get_default_dtype(), "i": _dtype.int64, "b": _dtype.bool_}.get(data.dtype.kind)
    if t.dtype is not default or data.size == 0 and t.dtype is not _dtype.get_default_dtype():
        extras.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return _with_suffixes(_PREFIX + body, extras, len(_PREFIX))
