"""Batching rules: how each registered op (numdiff.ops.OPS) runs on a whole vmap batch at once.

Each rule is attached to its op's spec (``attach(name, batching=rule)``, read as
``cls.spec.batching``) when this module is imported, which numdiff.func.vmap does.

A rule receives the op's inputs as values (a batched input has its batch as dim 0; `batched`
says which), the op's attrs in logical (per-example) terms and the batch size. It returns the
output value with the batch as dim 0, computed by the same op with adjusted attrs, so the batched
computation is recorded on the tape like any other and differentiates the same way. A rule returns
None for a case it does not cover, and the op falls back to a loop over the batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff._batched import align, logical_ndim
from numdiff._elementwise import SPEC as ELEMENTWISE_SPEC
from numdiff._ground.scalar_rules import RULES as SCALAR_RULES
from numdiff.backend import is_numpy, like_host, to_host
from numdiff.ops.registry import attach
from numdiff.tensor import Tensor

Rule = Callable[[Any, list, list, dict, int], Any]


def _materialize(value: Tensor, is_batched: bool, size: int) -> Tensor:
    """An unbatched tensor given an explicit (broadcast) batch dim 0."""
    if is_batched:
        return value
    return value.unsqueeze(0).expand(size, *value.shape)


def elementwise(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    return cls.apply(*align(values, batched), **attrs)


def _shift_dims(key: str) -> Rule:
    """Ops whose attr `key` holds logical dims (a tuple or an int): those dims move up by one."""

    def rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
        dims = attrs[key]
        shifted = dims + 1 if isinstance(dims, int) else tuple(d + 1 for d in dims)
        inputs = [_materialize(v, b, size) if isinstance(v, Tensor) else v for v, b in zip(values, batched)]
        return cls.apply(*inputs, **{**attrs, key: shifted})

    return rule


def mse_loss_mean_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    """One mean squared error per batch entry: the squares, then the mean of each entry's row."""
    x, target = (_materialize(v, b, size) for v, b in zip(values, batched))
    difference = x - target
    return (difference * difference).reshape(size, -1).mean(1)


def reshape_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    return cls.apply(values[0], shape=(size, *attrs["shape"]))


def permute_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    return cls.apply(values[0], dims=(0, *(d + 1 for d in attrs["dims"])))


def expand_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    value = values[0]
    shape = tuple(attrs["shape"])
    logical = tuple(value.shape[1:])
    value = value.reshape(size, *((1,) * (len(shape) - len(logical))), *logical)
    return cls.apply(value, shape=(size, *shape))


def _batched_key(key: tuple) -> tuple | None:
    """The index `key` with the batch dim in front, ``(slice(None), *key)``, when indexing with it
    keeps the batch dim first; else None. A bool mask becomes its integer index arrays (the same
    selection), and index arrays must sit side by side (separated ones move their dims to the front)."""
    expanded = []
    for k in key:
        if is_numpy(k) and k.dtype.kind == "b":
            if k.ndim == 0:
                return None
            expanded.extend(np.nonzero(k))
        else:
            expanded.append(k)
    advanced = [i for i, k in enumerate(expanded) if is_numpy(k)]
    if advanced and advanced != list(range(advanced[0], advanced[-1] + 1)):
        return None
    return (slice(None), *expanded)


def getitem_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor | None:
    key = _batched_key(attrs["key"])
    if key is None:
        return None
    return cls.apply(values[0], key=key)


def index_add_into_zeros_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor | None:
    """getitem's backward: the gradient is scattered into a zero tensor of the (batched) input shape."""
    key = _batched_key(attrs["key"])
    if key is None:
        return None
    grad = _materialize(values[0], batched[0], size)
    return cls.apply(grad, key=key, shape=(size, *attrs["shape"]))


def scaled_row_scatter_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor | None:
    """The batch as one scatter: example b's source rows, entries and output rows stacked, its take
    shifted by b times src's rows and its into by b times the output's (shared indices only)."""
    src, scale, take, into = values
    if batched[2] or batched[3]:
        return None
    src, scale = _materialize(src, batched[0], size), _materialize(scale, batched[1], size)
    rows, out_rows = src.shape[1], attrs["size"]
    example = np.arange(size, dtype=np.int64)[:, None]
    shifted = [
        Tensor._wrap(like_host((to_host(ids._data)[None] + example * n).reshape(-1), ids._data), None, None)
        for ids, n in ((take, rows), (into, out_rows))
    ]
    out = cls.apply(src.reshape(size * rows, src.shape[2]), scale.reshape(-1), *shifted, size=size * out_rows)
    return out.reshape(size, out_rows, src.shape[2])


def index_put_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor | None:
    key = attrs["key"]
    batched_key = _batched_key(key)
    if batched_key is None:
        return None
    x = _materialize(values[0], batched[0], size)
    value = values[1]
    if batched[1]:
        region = np.empty(tuple(x.shape[1:]), dtype=np.bool_)[key].shape
        (value,) = align([value, Tensor._wrap(np.empty(region, dtype=np.bool_), None, None)], [True, False])[:1]
    return cls.apply(x, value, key=batched_key)


def diagonal_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    return cls.apply(values[0], **{**attrs, "dim1": attrs["dim1"] + 1, "dim2": attrs["dim2"] + 1})


def as_strided_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    """Each example's view, one example's element count apart (the op reads its input flattened in C order)."""
    x = values[0]
    per_example = int(np.prod(x.shape[1:], dtype=np.int64))
    return cls.apply(x, size=(size, *attrs["size"]), stride=(per_example, *attrs["stride"]), offset=attrs["offset"])


def matmul_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    a, b = values
    a_vector = logical_ndim(a, batched[0]) == 1
    b_vector = logical_ndim(b, batched[1]) == 1
    if a_vector:
        a = a.unsqueeze(1) if batched[0] else a.unsqueeze(0)
    if b_vector:
        b = b.unsqueeze(-1)
    a, b = align([a, b], batched)
    out = cls.apply(a, b)
    if a_vector:
        out = out.squeeze(-2)
    if b_vector:
        out = out.squeeze(-1)
    return out


def conv2d_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    x, w, bias = values
    if not batched[1] and not batched[2]:
        # Only the input is batched: the batch joins the conv's own batch dim N.
        n = x.shape[1]
        out = cls.apply(x.reshape(size * n, *x.shape[2:]), w, bias, **attrs)
        return out.reshape(size, n, *out.shape[1:])
    # A batched weight: one grouped conv with the batch folded into the channels.
    x = _materialize(x, batched[0], size)
    w = _materialize(w, batched[1], size)
    n, channels = x.shape[1], x.shape[2]
    out_channels = w.shape[1]
    x_grouped = x.transpose(0, 1).reshape(n, size * channels, *x.shape[3:])
    w_grouped = w.reshape(size * out_channels, *w.shape[2:])
    b_grouped = None if bias is None else _materialize(bias, batched[2], size).reshape(size * out_channels)
    out = cls.apply(x_grouped, w_grouped, b_grouped, **{**attrs, "groups": attrs["groups"] * size})
    return out.reshape(n, size, out_channels, *out.shape[2:]).transpose(0, 1)


def fold_into_n(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor | None:
    """Pooling, or conv_transpose2d with a shared weight, over (N, C, H, W), and the (B, D, R) axis
    taps of conv3d and axis blends of interpolate: the vmap batch folds into the leading dim."""
    if any(batched[1:]):
        return None
    x = values[0]
    n = x.shape[1]
    out = cls.apply(x.reshape(size * n, *x.shape[2:]), *values[1:], **attrs)
    return out.reshape(size, n, *out.shape[1:])


def grouped_norm_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor | None:
    """grouped_norm with a shared scale and shift: the vmap batch joins the view's B (statistics are
    per b, so each vmap entry keeps its own); the op returns its input's shape."""
    if any(batched[1:]):
        return None
    view = attrs["view"]
    return cls.apply(*values, **{**attrs, "view": (size * view[0],) + tuple(view[1:])})


def grouped_moments_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    """grouped_moments of (size, B, N, G, K, S): the vmap batch folds into B, and the (2, size * B, G)
    result is split back to (size, 2, B, G)."""
    x = values[0]
    b = x.shape[1]
    out = cls.apply(x.reshape(size * b, *x.shape[2:]), **attrs)
    return out.reshape(2, size, b, out.shape[2]).transpose(0, 1)


def _repeated_structure(attrs: dict, size: int, rows: int, cols: int) -> dict:
    """A sparse product's structure attrs for `size` copies of the matrix down a block diagonal
    (copy b's rows and columns shifted by b * rows and b * cols): one product then serves the batch."""
    shifts = np.arange(size, dtype=np.int64)[:, None]
    columns = to_host(attrs["cols"])
    repeated = {"cols": like_host((columns[None] + shifts * cols).reshape(-1), attrs["cols"])}
    if "crow" in attrs:
        crow = to_host(attrs["crow"])
        offsets = (crow[None, :-1] + shifts * crow[-1]).reshape(-1)
        repeated["crow"] = like_host(np.append(offsets, size * crow[-1]), attrs["crow"])
    else:
        repeated["rows"] = like_host((to_host(attrs["rows"])[None] + shifts * rows).reshape(-1), attrs["rows"])
    if "n_rows" in attrs:
        repeated["n_rows"] = size * rows
    return repeated


def sparse_matmul_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    """coo_mm and csr_mm: a batch of dense operands sharing the sparse values folds into the
    columns; batched values multiply a block-diagonal matrix of the copies (no loop either way)."""
    entries, dense = values
    k, n = dense.shape[-2:]
    if not batched[0]:
        folded = dense.permute(1, 0, 2).reshape(k, size * n)
        out = cls.apply(entries, folded, **attrs)
        return out.reshape(out.shape[0], size, n).permute(1, 0, 2)
    m = attrs["n_rows"] if "n_rows" in attrs else attrs["crow"].shape[0] - 1
    stacked = _materialize(dense, batched[1], size).reshape(size * k, n)
    out = cls.apply(entries.reshape(-1), stacked, **{**attrs, **_repeated_structure(attrs, size, m, k)})
    return out.reshape(size, m, n)


def sparse_sampled_dot_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    """coo_sampled_dot and csr_sampled_dot: the batch's operands stacked, sampled at a block
    diagonal of the entries' copies."""
    a, b = (_materialize(v, is_batched, size) for v, is_batched in zip(values, batched))
    (m, n), k = a.shape[1:], b.shape[1]
    out = cls.apply(a.reshape(size * m, n), b.reshape(size * k, n), **{**attrs, **_repeated_structure(attrs, size, m, k)})
    return out.reshape(size, -1)


def leading_batch_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor:
    """Ops on the last one or two dims that batch over any leading dims (numdiff.linalg's): the
    vmap batch becomes one more leading dim of every input."""
    return cls.apply(*(_materialize(v, b, size) for v, b in zip(values, batched)), **attrs)


def linear_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor | None:
    """x @ weight.T + bias with a shared weight and bias: the vmap batch is one more leading dim of x."""
    if any(batched[1:]):
        return None
    return cls.apply(values[0], *values[1:], **attrs)


def cell_step_rule(cls: Any, values: list, batched: list, attrs: dict, size: int) -> Tensor | None:
    """lstm_cell_step, gru_cell_step and rnn_cell_step with shared parameters (the last four
    inputs): the vmap batch folds into the rows of x and the states."""
    if any(batched[-4:]):
        return None
    rows = [_materialize(v, b, size) for v, b in zip(values[:-4], batched[:-4])]
    n = rows[0].shape[1]
    out = cls.apply(*(r.reshape(size * n, r.shape[-1]) for r in rows), *values[-4:], **attrs)
    if out.ndim == 3:  # lstm_cell_step's (2, N, H): h', then c'
        return out.reshape(2, size, n, out.shape[-1]).permute(1, 0, 2, 3)
    return out.reshape(size, n, out.shape[-1])


def _attach(rule: Rule, *names: str) -> None:
    for name in names:
        attach(name, batching=rule)


# Every op of the scalar rule table is elementwise, and so are these.
_attach(elementwise, *SCALAR_RULES, "where", "keep_where", "clamp", "to_dtype", "to_device", "clone", "binary_cross_entropy",
        "fmod", "remainder")
_attach(_shift_dims("dims"), "sum", "prod", "amax", "amin", "flip", "roll")
_attach(_shift_dims("dim"), "log_softmax", "softmax", "cat", "gather", "scatter_add", "scatter", "cumsum", "cumprod", "logcumsumexp")
ELEMENTWISE_SPEC.attach(batching=elementwise)  # every @elementwise function
_attach(
    fold_into_n,
    "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d", "conv_transpose2d", "axis_taps",
    "axis_taps_backward", "axis_blend", "axis_blend_backward", "block_taps", "block_taps_backward",
)  # fmt: skip
_attach(diagonal_rule, "diagonal")
_attach(as_strided_rule, "as_strided")
_attach(reshape_rule, "reshape")
_attach(mse_loss_mean_rule, "mse_loss_mean")
_attach(permute_rule, "permute")
_attach(expand_rule, "expand")
_attach(getitem_rule, "getitem")
_attach(index_add_into_zeros_rule, "index_add_into_zeros")
_attach(index_put_rule, "index_put")
_attach(scaled_row_scatter_rule, "scaled_row_scatter")
_attach(matmul_rule, "matmul")
_attach(linear_rule, "linear")
_attach(cell_step_rule, "lstm_cell_step", "gru_cell_step", "rnn_cell_step")
_attach(conv2d_rule, "conv2d")
_attach(grouped_moments_rule, "grouped_moments")
_attach(grouped_norm_rule, "grouped_norm")
_attach(sparse_matmul_rule, "coo_mm", "csr_mm")
_attach(sparse_sampled_dot_rule, "coo_sampled_dot", "csr_sampled_dot")
_attach(
    leading_batch_rule,
    "solve_triangular", "linalg_solve", "linalg_inv", "linalg_pinv", "linalg_matrix_exp", "linalg_cholesky",
    "linalg_eigvalsh", "linalg_eigh_vectors", "linalg_svdvals", "linalg_svd_u", "linalg_svd_vh", "linalg_qr_q",
    "linalg_qr_r", "linalg_det", "linalg_logabsdet", "tril", "triu",
)  # fmt: skip

# Ops whose backward, run with grad mode on (the create_graph form), is made of ops that have a
# batching rule above and reads the incoming gradient only through ops. A reverse pass over a graph
# of these ops runs on a batch of cotangents as one batched pass (vjp_fn under vmap, and so jacrev);
# any other op in the graph (a custom Function, conv2d, pooling, an @elementwise function) makes
# vjp_fn rerun the function batched instead. Each entry's backward has been read for this.
for _name in (
    *SCALAR_RULES, "where", "keep_where", "clamp", "to_dtype", "clone", "binary_cross_entropy",
    "sum", "amax", "amin", "log_softmax", "softmax", "flip", "cat", "gather",
    "reshape", "permute", "expand", "getitem", "index_add_into_zeros", "matmul", "linear", "cumsum",
    "diagonal", "logcumsumexp", "roll", "mse_loss_mean",
):  # fmt: skip
    attach(_name, batched_backward=True)
