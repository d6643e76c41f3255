"""Passes over fx Graphs: shape_prop (shapes and dtypes in node.meta), graph_drawer (text)."""

from numdiff.fx.passes import graph_drawer, shape_prop
from numdiff.fx.passes.shape_prop import ShapeProp, TensorMetadata

__all__ = ["ShapeProp", "TensorMetadata", "graph_drawer", "shape_prop"]


def __dir__() -> list[str]:
    return sorted(__all__)
