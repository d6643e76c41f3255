"""How the compiler handles each registered op: its compile rule.

- ``"fused"``: an elementwise op with a scalar rule (numdiff._ground.scalar_rules), or ``where``:
  runs of them become one generated loop (fusion.py).
- ``"kernel"``: matmul, convolution, pooling, attention and the recurrent sequence ops: the generated code calls the op's array forward,
  which runs the Numba kernel on arrays with no Tensor or tape in between.
- ``"call"``: shape, indexing, reduction, conversion and loss ops: a direct array-forward call.
- ``"eager_backward"``: for an op whose backward cannot be traced (one that branches on values on
  the host), or whose traced form costs more than its own: the forward is replayed, and the
  generated backward calls the op's own backward on the replayed ctx instead of a traced formula.
  cumprod is one: its traced (create_graph) gradient builds an n x n matrix per row, while its
  first-order backward is one O(n) pass.

An op with no rule (a user `Function`, or a registered op missing here) is handled like
``"eager_backward"``, with a one-time warning naming it. tests/compile/test_rules.py fails for a
registered op without a rule.
"""

from __future__ import annotations

import warnings

from numdiff._ground.scalar_rules import RULES

_KERNEL = (
    "matmul", "linear", "conv2d", "conv_transpose2d", "conv2d_weight_grad", "max_pool2d", "adaptive_max_pool2d",
    "max_pool_scatter", "max_pool_gather", "avg_pool2d", "avg_pool2d_backward", "adaptive_avg_pool2d",
    "adaptive_avg_pool2d_backward", "lstm_sequence", "lstm_sequence_backward", "gru_sequence",
    "gru_sequence_backward", "rnn_sequence", "rnn_sequence_backward", "attention", "attention_backward",
)
_CALL = (
    "abs", "amax", "amin", "binary_cross_entropy", "cat", "clamp", "clone", "expand", "flip", "gather", "getitem",
    "index_add_into_zeros", "index_put", "log_softmax", "permute", "prod", "reshape", "scatter_add", "sign", "sum",
    "to_device", "to_dtype", "tril", "triu", "nll_loss", "cross_entropy", "cumsum", "diagonal", "scatter", "fmod",
    "remainder", "logcumsumexp",
    # the depth taps of conv3d/conv_transpose3d (numdiff.ops._axis_taps): strided copies and adds
    "axis_taps", "axis_taps_backward",
    # numdiff.linalg: one LAPACK call (or the batched triangular-solve kernel) on arrays
    "solve_triangular", "linalg_solve", "linalg_inv", "linalg_pinv", "linalg_matrix_exp", "linalg_cholesky",
    "linalg_eigvalsh", "linalg_eigh_vectors", "linalg_svdvals", "linalg_svd_u", "linalg_svd_vh", "linalg_qr_q",
    "linalg_qr_r", "linalg_det", "linalg_logabsdet",
    # sparse COO and CSR products (numdiff.sparse): each the other's gradient, Numba kernels on the arrays
    "coo_mm", "coo_sampled_dot", "csr_mm", "csr_sampled_dot",
)
_EAGER_BACKWARD: tuple[str, ...] = ("cumprod",)

COMPILE_RULES: dict[str, str] = {
    **{name: "fused" for name in RULES},
    "where": "fused",
    "gelu": "fused",
    **{name: "kernel" for name in _KERNEL},
    **{name: "call" for name in _CALL if name not in RULES},
    **{name: "eager_backward" for name in _EAGER_BACKWARD},
}

_warned: set = set()


def backward_is_traced(function: type) -> bool:
    """Whether the compiler may trace this op's backward into the generated backward."""
    name = getattr(function, "op_name", None) if function.array_forward else None
    rule = COMPILE_RULES.get(name) if name is not None else None
    if rule is None and function not in _warned:
        _warned.add(function)
        warnings.warn(
            f"numdiff.compile: op {getattr(function, 'op_name', function.__qualname__)!r} has no compile "
            "rule; its backward runs eagerly inside the compiled region",
            stacklevel=4,
        )
    return rule is not None and rule != "eager_backward"
