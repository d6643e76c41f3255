"""Spellings PyTorch still accepts with a deprecation warning, accepted here the same way: the
softmax family without `dim` (PyTorch's implicit choice), and upsample_nearest / upsample_bilinear
(interpolate under their older names, bilinear with align_corners=True as in PyTorch)."""

from __future__ import annotations

import warnings
from typing import Any

from numdiff.nn._resampling import interpolate
from numdiff.ops import activation
from numdiff.overrides import dispatch, is_overridable
from numdiff.tensor import Tensor


def implicit_softmax_dim(name: str, dim: int | None, input: Tensor, stacklevel: int = 3) -> int:
    """`dim`, or PyTorch's legacy choice when it is None (0 for 0-, 1- and 3-D inputs, else 1),
    with PyTorch's deprecation warning."""
    if dim is not None:
        return dim
    warnings.warn(
        f"{name}: implicit dimension choice is deprecated, pass dim explicitly", UserWarning, stacklevel=stacklevel
    )
    return 0 if input.ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim` (implicit, with a warning, when not given).

    >>> F.softmax(numdiff.zeros(2, 2), dim=1)
    tensor([[0.5000, 0.5000],
            [0.5000, 0.5000]])
    """
    if type(input) is not Tensor and is_overridable(input):  # a numdiff.fx Proxy records the call
        return dispatch(softmax, (input, dim), {} if dtype is None else {"dtype": dtype})
    return activation.softmax(input, implicit_softmax_dim("softmax", dim, input), dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """log(softmax(x)) along `dim` (implicit, with a warning, when not given)."""
    if type(input) is not Tensor and is_overridable(input):  # a numdiff.fx Proxy records the call
        return dispatch(log_softmax, (input, dim), {} if dtype is None else {"dtype": dtype})
    return activation.log_softmax(input, implicit_softmax_dim("log_softmax", dim, input), dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """softmax(-x) along `dim` (implicit, with a warning, when not given)."""
    if type(input) is not Tensor and is_overridable(input):  # a numdiff.fx Proxy records the call
        return dispatch(softmin, (input, dim), {} if dtype is None else {"dtype": dtype})
    return activation.softmin(input, implicit_softmax_dim("softmin", dim, input), dtype)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """interpolate(mode="nearest") under its deprecated name."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """interpolate(mode="bilinear", align_corners=True) under its deprecated name."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
