"""What one backward call walks: the nodes its roots reach, and, when the call names its `inputs`,
which of those nodes must run and which of their input gradients each must compute.

PyTorch's engine computes the same per call (a GraphTask's exec_info): `autograd.grad(critic(x)
.sum(), x, create_graph=True)` runs no weight-gradient formula, so with create_graph it records
none either. A node's `needs_input_grad` says which of its inputs require grad at all; that stays
as recorded, because a retained graph is walked again by later calls that ask for other inputs.
A built-in op's backward gets, instead of the node itself, a `NarrowedNode`: the same op, saved
values and attributes, with `needs_input_grad` narrowed to this call. A user Function's ctx keeps
the recorded value, as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Iterable

from numdiff.autograd.node import AccumulateGrad, Node


def discover(roots: Iterable[Node | AccumulateGrad]) -> dict:
    """Count, for each reachable node, how many edges lead into it."""
    dependencies: dict = {}
    if len(roots) > 1:
        stack = list(dict.fromkeys(roots))
        # A root that another root reaches is already on the stack.
        roots = set(stack)
    else:
        stack = list(roots)
        roots = ()  # a graph has no cycle: nothing leads back to the one root
    get = dependencies.get
    while stack:
        node = stack.pop()
        for next_node in node.next_nodes:
            if next_node is None:
                continue
            count = get(next_node)
            if count is None:
                dependencies[next_node] = 1
                if next_node not in roots:
                    stack.append(next_node)
            else:
                dependencies[next_node] = count + 1
    return dependencies


def plan_for_inputs(roots: list, dependencies: dict, targets: Iterable) -> tuple[set, dict]:
    """The nodes whose backward must run for a call that wants the gradients of `targets` (nodes),
    and, for those among them that need fewer input gradients than they record, the per-call
    `needs_input_grad` (a tuple, keyed by node).

    A node runs when one of its edges leads to a target; a target that leads to no other target
    only hands its gradient over. One pass in reverse execution order (each node after every
    node it feeds) over the graph `dependencies` counts.
    """
    remaining = dict(dependencies)
    order = []
    ready = [r for r in dict.fromkeys(roots) if remaining.get(r, 0) == 0]
    while ready:
        node = ready.pop()
        if node.next_nodes:  # a leaf's AccumulateGrad leads nowhere: nothing to plan for it
            order.append(node)
        for next_node in node.next_nodes:
            if next_node is None:
                continue
            count = remaining[next_node] - 1
            remaining[next_node] = count
            if count == 0:
                ready.append(next_node)
    leads = set(targets)  # the nodes from which a target can be reached
    runs = set()
    masks = {}
    leads_to = leads.__contains__
    for node in reversed(order):
        mask = tuple(map(leads_to, node.next_nodes))  # None is never in leads
        if True not in mask:
            continue
        leads.add(node)
        runs.add(node)
        if mask != node.needs_input_grad and getattr(node.function, "op_name", None) is not None:
            masks[node] = mask
    return runs, masks


class NarrowedNode(Node):
    """A built-in op's node as one backward call sees it: everything the node holds (its slots
    copied, its attribute dict shared, so what backward stores on ctx lands on the node), with
    `needs_input_grad` narrowed to the inputs this call's requested gradients flow through."""

    __slots__ = ("recorded",)

    @property
    def saved_tensors(self) -> tuple:
        # A saved output is rebuilt as a tensor of the recorded node, so a gradient recorded
        # through it (create_graph) flows back through that node, whose needs are the full ones.
        return self.recorded.saved_tensors


_new = object.__new__


def narrowed(node: Node, needs_input_grad: tuple) -> NarrowedNode:
    """`node` with `needs_input_grad` replaced for one backward call (see NarrowedNode)."""
    view = _new(NarrowedNode)
    view.function = node.function
    view.attrs = node.attrs
    view.next_nodes = node.next_nodes
    view.input_shapes = node.input_shapes
    view._saved = node._saved
    view._saved_versions = node._saved_versions
    view._freed = node._freed
    view.needs_input_grad = needs_input_grad
    view.__dict__ = node.__dict__
    view.recorded = node
    return view
