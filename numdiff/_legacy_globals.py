"""Process-wide settings that older PyTorch programs still call: ``set_default_tensor_type``,
``set_warn_always`` / ``is_warn_always_enabled``, and the ``default_generator`` and ``newaxis``
names at the top level.

>>> numdiff.set_default_tensor_type(numdiff.DoubleTensor); numdiff.get_default_dtype()
numdiff.float64
"""

from __future__ import annotations

from typing import Any

from numdiff import _dtype
from numdiff._device import set_default_device
from numdiff._random import default_generator
from numdiff._tensor_types import TensorType

__all__ = ["default_generator", "is_warn_always_enabled", "newaxis", "set_default_tensor_type", "set_warn_always"]

newaxis = None  # x[:, numdiff.newaxis] adds a dim, as NumPy's and PyTorch's
_warn_always = [False]


def set_default_tensor_type(t: Any) -> None:
    """Make a legacy tensor type's dtype the default (``numdiff.DoubleTensor`` or
    ``"torch.DoubleTensor"``); a ``torch.cuda.*`` type also makes CUDA the default device.
    Only floating point types can be the default, as in PyTorch."""
    if isinstance(t, TensorType):
        name, dtype = t.__name__, t.dtype
    elif isinstance(t, str):
        name = t
        bare = t.removeprefix("torch.").removeprefix("cuda.")
        dtype = next((d for d in _dtype.ALL_DTYPES if d.tensor_type == bare), None)
    else:
        raise TypeError(f"set_default_tensor_type: expected a tensor type such as numdiff.FloatTensor or its name, got {t!r}")
    if dtype is None:
        raise TypeError(f"set_default_tensor_type: invalid type {name!r}")
    if not dtype.is_floating_point:
        raise TypeError(f"set_default_tensor_type: only floating-point types are supported as the default type, got {name!r}")
    _dtype.set_default_dtype(dtype)
    if isinstance(t, str) and t.startswith("torch.cuda."):
        set_default_device("cuda")


def set_warn_always(b: bool) -> None:
    """Record whether warnings that PyTorch issues once should be issued every time (numdiff's
    warnings go through Python's warnings filters, which decide that)."""
    _warn_always[0] = bool(b)


def is_warn_always_enabled() -> bool:
    """What :func:`set_warn_always` last set (False at start)."""
    return _warn_always[0]
