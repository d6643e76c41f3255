"""numdiff.fx: torch.fx for numdiff. Symbolic tracing records a Module's forward as a Graph of
Nodes, which passes can read and rewrite, and GraphModule turns back into a runnable Module.

>>> class Net(numdiff.nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.fc = numdiff.nn.Linear(3, 2)
...     def forward(self, x):
...         return numdiff.relu(self.fc(x)) * 2
>>> gm = numdiff.fx.symbolic_trace(Net())
>>> [node.op for node in gm.graph.nodes]
['placeholder', 'call_module', 'call_function', 'call_function', 'output']

Calls reach the tracer three ways: operators and methods on a Proxy, Module calls (numdiff.nn's
own modules are leaves), and numdiff functions through the ``__numdiff_function__`` protocol
(numdiff.overrides), which numdiff's public functions honour where they meet a non-Tensor.
"""

from numdiff.fx import experimental, node, passes, proxy
from numdiff.fx._symbolic_trace import Tracer, symbolic_trace, wrap
from numdiff.fx.graph import Graph, GraphLintError
from numdiff.fx.graph_module import GraphModule
from numdiff.fx.interpreter import Interpreter, Transformer
from numdiff.fx.node import Node, map_arg
from numdiff.fx.proxy import Proxy, TraceError
from numdiff.fx.subgraph_rewriter import replace_pattern

__all__ = [
    "Graph",
    "GraphLintError",
    "GraphModule",
    "Interpreter",
    "Node",
    "Proxy",
    "TraceError",
    "Tracer",
    "Transformer",
    "experimental",
    "map_arg",
    "node",
    "passes",
    "proxy",
    "replace_pattern",
    "symbolic_trace",
    "wrap",
]


def __dir__() -> list[str]:
    return sorted(__all__)
