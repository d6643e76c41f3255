"""fuse: fold evaluation-mode BatchNorm layers into the convolution before them, in a traced copy.

Each ``call_module`` Node of a BatchNorm1d/2d/3d whose input is the Node of a Conv1d/2d/3d (and
the convolution's only user) is removed; the convolution gets the BatchNorm's scale and shift in
its weight and bias (numdiff.nn.utils.fuse_conv_bn_eval). Only for inference: the BatchNorm's
running statistics are baked in.
"""

from __future__ import annotations

import copy

from numdiff.fx._symbolic_trace import symbolic_trace
from numdiff.fx.graph_module import GraphModule
from numdiff.nn import BatchNorm1d, BatchNorm2d, BatchNorm3d, Conv1d, Conv2d, Conv3d, Module
from numdiff.nn.utils import fuse_conv_bn_eval

__all__ = ["fuse"]

_PAIRS = ((Conv1d, BatchNorm1d), (Conv2d, BatchNorm2d), (Conv3d, BatchNorm3d))


def __dir__() -> list[str]:
    return sorted(__all__)


def _set_module(root: Module, qualified_name: str, module: Module) -> None:
    parent_name, _, name = qualified_name.rpartition(".")
    parent = root.get_submodule(parent_name) if parent_name else root
    setattr(parent, name, module)


def fuse(model: Module, inplace: bool = False, no_trace: bool = False) -> GraphModule:
    """`model` traced, with each Conv -> BatchNorm pair folded into one convolution. The model must
    be in eval mode; `model` itself is left unchanged unless `inplace`.

    >>> net = numdiff.nn.Sequential(numdiff.nn.Conv2d(1, 2, 3), numdiff.nn.BatchNorm2d(2)).eval()
    >>> [n.op for n in fuse(net).graph.nodes]
    ['placeholder', 'call_module', 'output']
    """
    if model.training:
        raise ValueError("fuse: the model is in training mode; BatchNorm folds only with its running statistics, "
                         "so call model.eval() first")
    if not inplace:
        model = copy.deepcopy(model)
    gm = model if (no_trace and isinstance(model, GraphModule)) else symbolic_trace(model)
    modules = dict(gm.named_modules())
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or not node.args or getattr(node.args[0], "op", None) != "call_module":
            continue
        conv_node = node.args[0]
        conv, bn = modules.get(conv_node.target), modules.get(node.target)
        if not any(type(conv) is c and type(bn) is b for c, b in _PAIRS):
            continue
        if len(conv_node.users) > 1 or not bn.track_running_stats:
            continue
        fused = fuse_conv_bn_eval(conv, bn)
        _set_module(gm, conv_node.target, fused)
        modules[conv_node.target] = fused
        node.replace_all_uses_with(conv_node)
        gm.graph.erase_node(node)
    gm.graph.lint()
    gm.recompile()
    return gm
