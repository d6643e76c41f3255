"""Input checks shared by the layers: a wrong shape names the layer and the shape it expects."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from numdiff.tensor import Tensor

if TYPE_CHECKING:
    from numdiff.nn.modules.module import Module


def layer_name(module: Module) -> str:
    """The layer as it prints without children, e.g. ``Linear(in_features=4, out_features=2, bias=True)``."""
    return f"{type(module).__name__}({module.extra_repr()})"


def check_input(module: Module, input: Any, ok: bool, expected: str, name: str | None = None) -> None:
    """Raise ValueError naming the layer, the expected shape and the received one unless `ok`."""
    if ok and isinstance(input, Tensor):
        return  # every call of a layer comes here: its name (extra_repr) is built only for errors
    name = name or layer_name(module)
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: expected a Tensor input, got {type(input).__name__}")
    if not ok:
        raise ValueError(f"{name}: expected input of shape {expected}, got {tuple(input.shape)}")


def unbatched(fn: Callable[[Tensor], Any], input: Tensor, batched_ndim: int) -> Any:
    """Run `fn` on `input`, adding and removing the batch dim when `input` comes without one."""
    if input.ndim == batched_ndim:
        return fn(input)
    out = fn(input.unsqueeze(0))
    if isinstance(out, tuple):
        return tuple(o.squeeze(0) for o in out)
    return out.squeeze(0)
