"""Padding layers over numdiff.nn.functional.pad: Zero, Constant, Reflection, Replication and
Circular padding of 1, 2 or 3 trailing dims, with PyTorch's names, arguments and reprs."""

from __future__ import annotations

from collections.abc import Sequence

from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.nn.modules.module import Module
from numdiff.tensor import Tensor


class _PadNd(Module):
    """Pad the last `_dims` dims; `padding` is one int for every side or (left, right, top, ...)."""

    _dims = 1
    _mode = "constant"

    def __init__(self, padding: int | Sequence[int], value: float = 0.0) -> None:
        super().__init__()
        sides = 2 * self._dims
        if isinstance(padding, int) and not isinstance(padding, bool):
            padding = (padding,) * sides
        padding = tuple(padding)
        if len(padding) != sides or not all(isinstance(p, int) and not isinstance(p, bool) for p in padding):
            raise ValueError(f"{type(self).__name__}: padding must be an int or {sides} ints, got {padding!r}")
        self.padding = padding
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        value = self.value if self._mode == "constant" else None
        return functional.pad(input, self.padding, self._mode, value)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__(padding, value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_PadNd):
    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)


def _layer(name: str, base: type, dims: int, mode: str, doc: str) -> type:
    return type(name, (base,), {"_dims": dims, "_mode": mode, "__doc__": doc, "__module__": __name__})


_KINDS = (
    ("ZeroPad", _ZeroPadNd, "constant", "Pad the last {d} dim(s) with zeros."),
    ("ConstantPad", _ConstantPadNd, "constant", "Pad the last {d} dim(s) with `value`."),
    ("ReflectionPad", _PadNd, "reflect", "Pad the last {d} dim(s) with their reflection at each edge."),
    ("ReplicationPad", _PadNd, "replicate", "Pad the last {d} dim(s) by repeating the edge values."),
    ("CircularPad", _PadNd, "circular", "Pad the last {d} dim(s) by wrapping around."),
)
LAYERS = {
    f"{kind}{d}d": _layer(f"{kind}{d}d", base, d, mode, doc.format(d=d)) for kind, base, mode, doc in _KINDS for d in (1, 2, 3)
}
globals().update(LAYERS)
__all__ = sorted(LAYERS)
