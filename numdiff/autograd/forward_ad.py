"""Forward-mode automatic differentiation with dual tensors, as torch.autograd.forward_ad.

Inside ``with dual_level():``, ``make_dual(primal, tangent)`` makes a tensor that carries a
tangent, every op pushes tangents forward, and ``unpack_dual(out).tangent`` reads the result's::

    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, direction)
        jvp = forward_ad.unpack_dual(f(x)).tangent

A dual level is numdiff.func's jvp level (numdiff.func._forward.JvpLevel) pushed for the block,
so each op's tangent comes from the same rules as func.jvp's.
"""

from __future__ import annotations

import threading
from collections import namedtuple
from typing import Any

from numdiff.autograd.transform_state import pop, push, transforms
from numdiff.func._forward import ForwardModeRerun, JvpLevel
from numdiff.tensor import Tensor

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


class _Levels(threading.local):
    def __init__(self) -> None:
        self.stack: list[JvpLevel] = []


_levels = _Levels()


def enter_dual_level() -> int:
    """Start a dual level in this thread; returns its index."""
    level = JvpLevel()
    push(level)
    _levels.stack.append(level)
    return len(_levels.stack) - 1


def exit_dual_level(*, level: int | None = None) -> None:
    """End this thread's innermost dual level (its tangents are forgotten)."""
    if not _levels.stack:
        raise RuntimeError("exit_dual_level: no dual level is active")
    if level is not None and level != len(_levels.stack) - 1:
        raise RuntimeError(f"exit_dual_level: level {level} is not the innermost ({len(_levels.stack) - 1})")
    pop(_levels.stack.pop())


class dual_level:  # noqa: N801 - PyTorch's name
    """A block in which dual tensors carry tangents (``with dual_level():``)."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc_info: object) -> None:
        exit_dual_level()


def _level(op: str, level: int | None) -> JvpLevel:
    if not _levels.stack:
        raise RuntimeError(f"{op}: no dual level is active; use it inside `with forward_ad.dual_level():`")
    if level is not None and not 0 <= level < len(_levels.stack):
        raise ValueError(f"{op}: there is no dual level {level}")
    return _levels.stack[-1 if level is None else level]


def _below(level: JvpLevel, run: Any) -> Any:
    saved = transforms.interpreter
    transforms.interpreter = level.parent
    try:
        return run()
    finally:
        transforms.interpreter = saved


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of `tensor` that carries `tangent` (same shape, floating dtypes) at the dual level."""
    current = _level("make_dual", level)
    for name, value in (("tensor", tensor), ("tangent", tangent)):
        if not isinstance(value, Tensor) or not value.is_floating_point():
            raise TypeError(f"make_dual: {name} must be a floating point Tensor, got {getattr(value, 'dtype', type(value).__name__)}")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise ValueError(f"make_dual: tangent of shape {tuple(tangent.shape)} does not match the primal's {tuple(tensor.shape)}")
    dual = _below(current, lambda: tensor[...])
    current.set_tangent(dual, tangent.to(tensor.dtype))
    return dual


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """(primal, tangent) of `tensor`: a view of its value without the tangent, and the tangent
    (None when it carries none, or outside every dual level)."""
    if not _levels.stack or not isinstance(tensor, Tensor):
        return UnpackedDualTensor(tensor, None)
    current = _level("unpack_dual", level)
    try:
        tangent = current.tangent_of(tensor)
    except ForwardModeRerun:
        raise RuntimeError(
            "unpack_dual: the tensor is a view read after an in-place update of its base inside the dual "
            "level; numdiff's forward mode cannot follow that: clone() the view before updating the base"
        ) from None
    primal = _below(current, lambda: tensor[...])
    return UnpackedDualTensor(primal, tangent)


__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]


def __dir__() -> list[str]:
    return sorted(__all__)
