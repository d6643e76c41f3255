"""``Variable``: the wrapper PyTorch had before 0.4, kept for old programs.

Every tensor is a Variable (``isinstance(t, Variable)`` holds), and ``Variable(t, requires_grad)``
is ``t.detach().requires_grad_(requires_grad)``: a new leaf sharing t's memory, as in PyTorch today.
"""

from __future__ import annotations

from typing import Any

from numdiff.tensor import Tensor


class _VariableMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)``: a leaf sharing `data`'s memory.

    >>> v = Variable(numdiff.ones(2), requires_grad=True)
    >>> v.is_leaf, v.requires_grad
    (True, True)
    """

    def __new__(cls, data: Tensor, requires_grad: bool = False, volatile: bool = False) -> Tensor:  # noqa: ARG003
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable: data must be a Tensor, got {type(data).__name__}")
        leaf = data.detach()
        return leaf.requires_grad_(requires_grad) if requires_grad else leaf
