"""ShapeProp: run a GraphModule on example inputs and record each Node's result's shape and dtype.

After ``ShapeProp(gm).propagate(x)``, ``node.meta["tensor_meta"]`` is a TensorMetadata (or a
tuple/list/dict of them, for Nodes returning several tensors) and ``node.meta["type"]`` the result's type.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from numdiff.fx.interpreter import Interpreter
from numdiff.fx.node import Node, map_aggregate
from numdiff.tensor import Tensor

__all__ = ["ShapeProp", "TensorMetadata"]


def __dir__() -> list[str]:
    return sorted(__all__)


class TensorMetadata(NamedTuple):
    """What ShapeProp records of a tensor: shape, dtype, requires_grad, stride, contiguity."""

    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple[int, ...]
    is_contiguous: bool


def extract_tensor_metadata(result: Tensor) -> TensorMetadata:
    """The TensorMetadata of `result`."""
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, tuple(result.stride()),
                          result.is_contiguous())


class ShapeProp(Interpreter):
    """Records ``tensor_meta`` and ``type`` in every Node's meta while running the module.

    >>> gm = numdiff.fx.symbolic_trace(numdiff.nn.Sequential(numdiff.nn.Linear(3, 2)))
    >>> _ = ShapeProp(gm).propagate(numdiff.ones(4, 3))
    >>> [tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes if n.op == "call_module"]
    [(4, 2)]
    """

    def run_node(self, n: Node) -> Any:
        """Run `n` and record its result's metadata."""
        result = super().run_node(n)
        found = False

        def record(value: Any) -> Any:
            nonlocal found
            if isinstance(value, Tensor):
                found = True
                return extract_tensor_metadata(value)
            return value

        meta = map_aggregate(result, record)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the module on `args`, recording metadata; returns its result."""
        return super().run(*args)
