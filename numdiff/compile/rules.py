"""How the compiler handles each registered op: its compile rule, given to ``register`` beside the
op's Function (``@register("conv2d", compile="kernel", ...)``) and kept on its spec
(numdiff.ops.registry.OpSpec.compile).

- ``"fused"``: an elementwise op with a scalar rule (numdiff._ground.scalar_rules), or ``where``:
  runs of them become one generated loop (fusion.py).
- ``"kernel"``: matmul, convolution, pooling, attention and the recurrent sequence ops: the generated code calls the op's array forward,
  which runs the Numba kernel on arrays with no Tensor or tape in between.
- ``"call"``: shape, indexing, reduction, conversion and loss ops: a direct array-forward call.
- ``"eager_backward"``: for an op whose backward cannot be traced (one that branches on values on
  the host), or whose traced form costs more than its own: the forward is replayed, and the
  generated backward calls the op's own backward on the replayed ctx instead of a traced formula.
  cumprod is one: its traced (create_graph) gradient builds an n x n matrix per row, while its
  first-order backward is one O(n) pass. ctc_loss is another: a replayed forward does not know
  whether a gradient is wanted, so its backward recomputes it with the kernel from log_probs,
  an array a traced backward would bake in as a constant.

An op with no rule (a user `Function`, or a registered op whose spec has none) is handled like
``"eager_backward"``, with a one-time warning naming it. tests/compile/test_rules.py fails for a
registered op without a rule.
"""

from __future__ import annotations

import warnings

_warned: set = set()


def backward_is_traced(function: type) -> bool:
    """Whether the compiler may trace this op's backward into the generated backward."""
    spec = getattr(function, "spec", None) if function.array_forward else None
    rule = spec.compile if spec is not None else None
    if rule is None and function not in _warned:
        _warned.add(function)
        warnings.warn(
            f"numdiff.compile: op {getattr(function, 'op_name', None) or function.__qualname__!r} has no compile "
            "rule; its backward runs eagerly inside the compiled region",
            stacklevel=4,
        )
    return rule is not None and rule != "eager_backward"
