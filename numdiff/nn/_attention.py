"""Attention: scaled_dot_product_attention and the multi-head attention forward that
nn.MultiheadAttention (and with it the Transformer layers) runs.

scaled_dot_product_attention runs the fused attention op (numdiff.ops.attention: one kernel per
direction, the probabilities rebuilt in backward from each row's log-sum-exp) when it can: no
dropout, float32/float64, q, k and v with one batch shape, a mask that needs no gradient, outside
vmap. Otherwise, and for multi-head attention asked for its weights, it is composed from
differentiable ops.

Masks follow PyTorch: for scaled_dot_product_attention a bool mask is True where a query *may*
attend; for multi-head attention's attn_mask and key_padding_mask a bool True marks a position
to *leave out*. Float masks are added to the scores in both.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numdiff._dtype import float32, float64
from numdiff.autograd.transform_state import graph_recording
from numdiff.backend import holds_values
from numdiff.creation import tensor, zeros
from numdiff.nn._functional_layers import dropout
from numdiff.onnx._state import exporting as onnx_exporting
from numdiff.ops._util import broadcast_shape, vmapped
from numdiff.ops.activation import softmax
from numdiff.ops.attention import attention
from numdiff.ops.joining import cat
from numdiff.ops.linalg import linear, matmul
from numdiff.ops.selection import where
from numdiff.tensor import Tensor

_FUSED_DTYPES = (float32, float64)  # the fused attention kernel's dtypes


def _check_float(op: str, name: str, t: Any) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: argument '{name}' must be a Tensor, not {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{op}: expected '{name}' to be a floating point tensor, got dtype {t.dtype!r}")
    return t


def _mask_as_bias(op: str, name: str, mask: Tensor, allowed_when_true: bool, like: Tensor) -> Tensor:
    """A bool mask as an additive bias (0 or -inf) of `like`'s dtype; a float mask as it is."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(mask).__name__}")
    if mask._data.dtype.kind == "b":
        blocked = mask.logical_not() if allowed_when_true else mask
        return zeros(*mask.shape, dtype=like.dtype, device=like.device).masked_fill(blocked, -math.inf)
    if mask.dtype is not like.dtype:
        raise TypeError(f"{op}: {name} must be bool or of the query's dtype {like.dtype!r}, got {mask.dtype!r}")
    return mask


def values_to_branch_on(tensor: Tensor) -> bool:
    """Whether Python may branch on `tensor`'s values here: not inside a compiled trace (the graph
    would keep the first call's branch for every later value), not under vmap (the values differ per
    batch entry) and not on the meta device (no values). Where it may not, callers take the form that
    is right for every value."""
    return not graph_recording() and not vmapped(tensor) and holds_values(tensor._data)


def _safe_softmax(scores: Tensor) -> Tensor:
    """softmax over the last dim, giving 0 (not NaN) on rows where every score is -inf, as PyTorch's
    scaled_dot_product_attention does. Those rows are zeroed before the softmax so no NaN reaches backward."""
    fully_masked = (scores == -math.inf).all(-1, keepdim=True)
    if values_to_branch_on(scores) and not fully_masked.any().item():
        return softmax(scores, -1)
    return where(fully_masked, 0.0, softmax(where(fully_masked, 0.0, scores), -1))


def _causal_bias(rows: int, cols: int, like: Tensor) -> Tensor:
    """0 on and below the diagonal of a (rows, cols) grid, -inf above: a query sees only earlier keys."""
    upper = np.triu(np.ones((rows, cols), dtype=bool), k=1)
    bias = np.where(upper, -np.inf, 0.0)
    return tensor(bias, dtype=like.dtype, device=like.device)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(q k^T * scale + mask) v over the last two dims: query (..., L, E), key (..., S, E),
    value (..., S, Ev) -> (..., L, Ev). scale defaults to 1/sqrt(E); dropout_p drops attention weights
    (always, as PyTorch: pass 0 in eval); enable_gqa lets key/value have fewer heads (dim -3).

    >>> q = numdiff.randn(2, 4, 5, 8)
    >>> scaled_dot_product_attention(q, q, q, is_causal=True).shape
    numdiff.Size([2, 4, 5, 8])
    """
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        _check_float(op, name, t)
        if t.ndim < 2:
            raise ValueError(f"{op}: {name} needs at least 2 dims (..., seq, features), got shape {tuple(t.shape)}")
    if not (query.dtype is key.dtype and key.dtype is value.dtype):
        raise TypeError(f"{op}: query, key and value must share a dtype, got {query.dtype!r}, {key.dtype!r}, {value.dtype!r}")
    if key.shape[-1] != query.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"{op}: expected query (..., L, E), key (..., S, E) and value (..., S, Ev), got shapes "
            f"{tuple(query.shape)}, {tuple(key.shape)} and {tuple(value.shape)}"
        )
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1], got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op}: explicit attn_mask should not be set when is_causal=True")
    if enable_gqa:
        key, value = _repeat_kv_heads(op, query, key, value)
    batch = broadcast_shape(op, tuple(query.shape[:-2]), tuple(key.shape[:-2]), tuple(value.shape[:-2]))
    rows, cols = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    bias = None
    if attn_mask is not None:
        bias = _mask_as_bias(op, "attn_mask", attn_mask, True, query)
        try:
            broadcast_shape(op, tuple(bias.shape), batch + (rows, cols))
        except ValueError:
            raise ValueError(f"{op}: attn_mask of shape {tuple(bias.shape)} does not broadcast to the scores' shape {batch + (rows, cols)}") from None
    if _fused_applies(query, key, value, bias, dropout_p, batch):
        return _fused(query, key, value, bias, scale, is_causal, batch)
    scores = matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        scores = scores + _causal_bias(rows, cols, query)
    if bias is not None:
        scores = scores + bias
    weights = _safe_softmax(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return matmul(weights, value)


def _fused_applies(query: Tensor, key: Tensor, value: Tensor, bias: Tensor | None, dropout_p: float, batch: tuple) -> bool:
    """Whether the fused kernel (numdiff.ops.attention) runs: no dropout, float32/float64, one
    batch shape for q, k and v, a constant mask, no vmap (which has no rule for the fused op) and
    no ONNX export (the fused op has no ONNX form)."""
    return (
        dropout_p == 0.0
        and query.dtype in _FUSED_DTYPES
        and query.shape[:-2] == key.shape[:-2] == value.shape[:-2] == batch
        and (bias is None or not bias.requires_grad)
        and not vmapped(query, key, value)
        and not onnx_exporting[0]
    )


def _fused(query: Tensor, key: Tensor, value: Tensor, bias: Tensor | None, scale: float, causal: bool, batch: tuple) -> Tensor:
    """scaled_dot_product_attention through the fused attention op, heads flattened to one dim."""
    rows, cols, width = query.shape[-2], key.shape[-2], value.shape[-1]
    heads = math.prod(batch)
    if _per_sequence(query, key, value, bias, batch):
        return _fused_per_sequence(query, key, value, bias, scale, causal)
    if bias is not None:
        lead = tuple(bias.shape[:-2])
        if all(n == 1 for n in lead):
            bias = bias.reshape(1, *bias.shape[-2:]).expand(1, rows, cols)
        else:
            bias = bias.expand(*batch, rows, cols).reshape(heads, rows, cols)
    out = attention(
        query.reshape(heads, rows, query.shape[-1]), key.reshape(heads, cols, key.shape[-1]),
        value.reshape(heads, cols, width), bias, scale, causal,
    )  # fmt: skip
    return out[..., :width].reshape(*batch, rows, width)


def _per_sequence(query: Tensor, key: Tensor, value: Tensor, bias: Tensor | None, batch: tuple) -> bool:
    """Whether q, k and v are (N, H, ., .) with a mask that varies over N only (a key padding mask)
    and flattening (N, H) copies them anyway (heads split from a projection): then heads ordered
    (H, N) share an (N, L, S) mask instead of an (N * H, L, S) copy of it."""
    if bias is None or len(batch) != 2 or bias.ndim != 4 or bias.shape[1] != 1 or bias.shape[0] == 1 or batch[1] == 1:
        return False

    def flat_is_view(t: Tensor) -> bool:
        return t.stride(0) == batch[1] * t.stride(1)

    return not all(flat_is_view(t) for t in (query, key, value))


def _fused_per_sequence(query: Tensor, key: Tensor, value: Tensor, bias: Tensor, scale: float, causal: bool) -> Tensor:
    """_fused with heads ordered (H, N): head h * N + n adds bias[n] (numdiff.ops.attention)."""
    sequences, heads_per_sequence, rows = query.shape[:3]
    cols, width = key.shape[-2], value.shape[-1]

    def flat(t: Tensor) -> Tensor:
        return t.transpose(0, 1).reshape(sequences * heads_per_sequence, *t.shape[2:])

    shared = bias.expand(sequences, 1, rows, cols).reshape(sequences, rows, cols)
    out = attention(flat(query), flat(key), flat(value), shared, scale, causal)
    return out[..., :width].reshape(heads_per_sequence, sequences, rows, width).transpose(0, 1)


def _repeat_kv_heads(op: str, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
    """Grouped-query attention: repeat each key/value head (dim -3) to match the query's head count."""
    if min(query.ndim, key.ndim, value.ndim) < 3:
        raise ValueError(f"{op}: enable_gqa needs a heads dim (..., H, L, E), got shapes {tuple(query.shape)}, {tuple(key.shape)}")
    heads, kv_heads = query.shape[-3], key.shape[-3]
    if value.shape[-3] != kv_heads or kv_heads == 0 or heads % kv_heads:
        raise ValueError(
            f"{op}: with enable_gqa the query's {heads} heads must be a multiple of the key's {kv_heads} "
            f"and value's {value.shape[-3]} heads"
        )
    groups = heads // kv_heads

    def repeat(t: Tensor) -> Tensor:
        shape = tuple(t.shape)
        spread = t.unsqueeze(-3).expand(*shape[:-2], groups, *shape[-2:])
        return spread.reshape(*shape[:-3], heads, *shape[-2:])

    return repeat(key), repeat(value)


def _project(query: Tensor, key: Tensor, value: Tensor, in_proj: Tensor | tuple, bias: Tensor | None) -> tuple:
    """The query, key and value projections. With the packed (3E, E) weight, self-attention (one
    tensor for all three) is one GEMM and key is value (attention over an encoder's memory) two,
    as PyTorch runs them; the pieces are views of the one product, whose gradient the engine writes
    into one buffer. Separate weights, or three different inputs, take three GEMMs."""
    if isinstance(in_proj, Tensor):
        if query is key and key is value:
            return linear(query, in_proj, bias).chunk(3, -1)
        embed = in_proj.shape[1]
        b_q, b_kv = bias.split([embed, 2 * embed]) if bias is not None else (None, None)
        if key is value:
            w_q, w_kv = in_proj.split([embed, 2 * embed])
            return (linear(query, w_q, b_q), *linear(key, w_kv, b_kv).chunk(2, -1))
        in_proj = in_proj.chunk(3)
    w_q, w_k, w_v = in_proj
    b_q, b_k, b_v = bias.chunk(3) if bias is not None else (None, None, None)
    return linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)


def _split_heads(t: Tensor, num_heads: int, batch_first: bool) -> Tensor:
    """(N, S, E) if batch_first else (S, N, E) -> a (N, heads, S, E / heads) view."""
    if batch_first:
        batch, seq, embed = t.shape
        return t.reshape(batch, seq, num_heads, embed // num_heads).transpose(1, 2)
    seq, batch, embed = t.shape
    return t.reshape(seq, batch, num_heads, embed // num_heads).permute(1, 2, 0, 3)


def multi_head_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    num_heads: int,
    in_proj: Tensor | tuple[Tensor, Tensor, Tensor],
    in_proj_bias: Tensor | None,
    out_proj: tuple[Tensor, Tensor | None],
    bias_kv: tuple[Tensor, Tensor] | None = None,
    add_zero_attn: bool = False,
    dropout_p: float = 0.0,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
    name: str = "multi_head_attention",
    batch_first: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention on batched (L, N, E) query and (S, N, kdim/vdim) key/value, or (N, L, E)
    and (N, S, ...) with batch_first.

    `in_proj` is the packed (3E, E) query/key/value weight or the three weights, `in_proj_bias`
    their stacked (3E,) bias, `out_proj` the output (weight, bias). Returns the output in the
    input's layout and the weights (N, L, S), or (N, heads, L, S) with average_attn_weights=False,
    or None when need_weights=False.
    """
    if batch_first:
        batch, rows, embed = query.shape
    else:
        rows, batch, embed = query.shape
    head_dim = embed // num_heads
    q, k, v = _project(query, key, value, in_proj, in_proj_bias)

    if is_causal and attn_mask is None:
        raise RuntimeError(f"{name}: need attn_mask if specifying the is_causal hint")
    cols = key.shape[1 if batch_first else 0]
    if attn_mask is not None:
        attn_mask = _mask_as_bias(name, "attn_mask", attn_mask, False, query)
        expected = [(rows, cols), (batch * num_heads, rows, cols)]
        if tuple(attn_mask.shape) not in expected:
            raise ValueError(f"{name}: attn_mask should have shape {expected[0]} or {expected[1]}, got {tuple(attn_mask.shape)}")
        lead = (1, 1) if attn_mask.ndim == 2 else (batch, num_heads)
        attn_mask = attn_mask.reshape(*lead, rows, cols)
    if key_padding_mask is not None:
        key_padding_mask = _mask_as_bias(name, "key_padding_mask", key_padding_mask, False, query)
        if tuple(key_padding_mask.shape) != (batch, cols):
            raise ValueError(f"{name}: key_padding_mask should have shape {(batch, cols)}, got {tuple(key_padding_mask.shape)}")
        key_padding_mask = key_padding_mask.reshape(batch, 1, 1, cols)

    q, k, v = (_split_heads(t, num_heads, batch_first) for t in (q, k, v))
    if bias_kv is not None:
        bias_k, bias_v = bias_kv
        k = cat([k, bias_k.reshape(1, num_heads, 1, head_dim).expand(batch, num_heads, 1, head_dim)], 2)
        v = cat([v, bias_v.reshape(1, num_heads, 1, head_dim).expand(batch, num_heads, 1, head_dim)], 2)
        attn_mask, key_padding_mask = _pad_masks(attn_mask, key_padding_mask)
    if add_zero_attn:
        empty_slot = zeros(batch, num_heads, 1, head_dim, dtype=q.dtype, device=q.device)
        k, v = cat([k, empty_slot], 2), cat([v, empty_slot], 2)
        attn_mask, key_padding_mask = _pad_masks(attn_mask, key_padding_mask)
    # A truthful causal hint lets the kernel hide the future itself, the padding mask as its bias.
    causal_padded = is_causal and key_padding_mask is not None and bias_kv is None and not add_zero_attn
    padding = key_padding_mask
    if key_padding_mask is not None:
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if need_weights:
        scores = matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p, True)
        attended = matmul(weights, v)
        weights = weights.mean(1) if average_attn_weights else weights
    else:
        # PyTorch's fast path: a truthful is_causal hint with no padding mask becomes a causal mask.
        causal = is_causal and key_padding_mask is None
        if causal_padded and _fused_applies(q, k, v, padding, dropout_p, (batch, num_heads)):
            attended = _fused(q, k, v, padding, 1.0 / math.sqrt(head_dim), True, (batch, num_heads))
        else:
            attended = scaled_dot_product_attention(q, k, v, None if causal else attn_mask, dropout_p, causal)
        weights = None
    # (N, heads, L, E / heads) -> rows of E in the input's layout, for the output projection.
    attended = attended.transpose(1, 2) if batch_first else attended.permute(2, 0, 1, 3)
    out = linear(attended.reshape(-1, embed), *out_proj)
    return out.reshape((batch, rows, embed) if batch_first else (rows, batch, embed)), weights


def _pad_masks(attn_mask: Tensor | None, key_padding_mask: Tensor | None) -> tuple[Tensor | None, Tensor | None]:
    """One more (unmasked) key column at the end of each mask, for an appended bias_k or zero key."""

    def pad(mask: Tensor | None) -> Tensor | None:
        if mask is None:
            return None
        return cat([mask, zeros(*mask.shape[:-1], 1, dtype=mask.dtype, device=mask.device)], -1)

    return pad(attn_mask), pad(key_padding_mask)


__all__ = ["multi_head_attention", "scaled_dot_product_attention"]
