"""A grad_fn's saved tensors one by one, as PyTorch's ``grad_fn._raw_saved_<name>`` objects.

``y.grad_fn._raw_saved_self.register_hooks(pack, unpack)`` stores that one saved tensor as
``pack(tensor)`` (called at once) and gives ``unpack(packed)`` to backward and to
``y.grad_fn._saved_self``, as saved_tensors_hooks does for every tensor saved in its block.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numdiff.autograd import graph

__all__ = ["SavedTensor"]


def __dir__() -> list[str]:
    return sorted(__all__)


class SavedTensor:
    """One slot a grad_fn saved for backward (PyTorch's torch._C._autograd.SavedTensor)."""

    __slots__ = ("node", "index", "name")

    def __init__(self, node: Any, index: int, name: str | None) -> None:
        self.node, self.index, self.name = node, index, name

    def __repr__(self) -> str:
        return f"<SavedTensor {self.name or self.index} of {self.node.name()}>"

    def register_hooks(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        """Store this saved tensor as ``pack_hook(tensor)`` now, and read it back through
        ``unpack_hook(packed)`` in backward.

        >>> y = x.pow(2)
        >>> y.grad_fn._raw_saved_self.register_hooks(lambda t: t.numpy(), numdiff.from_numpy)
        """
        for role, hook in (("pack_hook", pack_hook), ("unpack_hook", unpack_hook)):
            if not callable(hook):
                raise TypeError(f"SavedTensor.register_hooks: {role} must be callable, got {type(hook).__name__}")
        node = self.node
        if node._freed:
            raise RuntimeError(
                f"SavedTensor.register_hooks: the tensors {node.name()} saved were freed by a backward; "
                "register hooks before backward (or pass retain_graph=True to it)"
            )
        saved = list(node._saved)
        if type(saved[self.index]) is graph.PackedSaved:
            raise RuntimeError(
                f"SavedTensor.register_hooks: {node.name()}'s saved {self.name or self.index} already has "
                "hooks (set by an earlier register_hooks or by saved_tensors_hooks); a saved tensor takes one pair"
            )
        tensor = node.saved_tensors[self.index]
        saved[self.index] = graph.PackedSaved(pack_hook(tensor), unpack_hook, self.name)
        node._saved = saved
