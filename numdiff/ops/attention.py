"""Fused scaled dot-product attention: ``attention`` and its backward, ``attention_backward``.

The forward kernel (numdiff.kernels.attention, numdiff.cuda.kernels.attention) returns
(B, L, Ev + 1): the attention output and each row's log-sum-exp, which backward uses to rebuild
the probabilities instead of keeping a (B, L, S) matrix. The backward op returns dQ, dK and dV of
each head flat, side by side, sliced apart here. The backward op is differentiated by recomputing
attention from numdiff ops (``composed_attention``), so second derivatives are exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numdiff.autograd import grad as autograd_grad
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import enable_grad, is_grad_enabled
from numdiff.backend import backend_for
from numdiff.creation import tensor
from numdiff.ops.activation import softmax
from numdiff.ops.joining import cat
from numdiff.ops.registry import register
from numdiff.ops.selection import where
from numdiff.tensor import Tensor

__all__ = ["attention", "composed_attention"]


def _c(x: Any) -> Any:
    return np.ascontiguousarray(x, like=x)


def _bias_array(bias: Any, like: Any) -> Any:
    return np.zeros((0, 0, 0), dtype=like.dtype, like=like) if bias is None else _c(bias)


def composed_attention(q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None, scale: float, causal: bool) -> Tensor:
    """What ``attention`` returns, from numdiff ops: [softmax(scale q k^T + bias) v, log-sum-exp]."""
    scores = (q @ k.transpose(-2, -1)) * scale
    if bias is not None:
        heads, shared = scores.shape[0], bias.shape[0]
        if shared not in (1, heads):  # head b reads bias[b % Bb]: the bias tiled along the heads
            bias = bias.unsqueeze(0).expand(heads // shared, *bias.shape).reshape(heads, *bias.shape[1:])
        scores = scores + bias
    if causal:
        rows, cols = scores.shape[-2:]
        hidden = tensor(np.triu(np.ones((rows, cols), dtype=bool), k=1), device=q.device)
        scores = where(hidden, -math.inf, scores)
    top = scores.amax(-1, keepdim=True).detach()
    blind = top == -math.inf  # rows that see no key: output 0, log-sum-exp -inf
    shift = where(blind, 0.0, top)
    safe = where(blind, 0.0, scores)
    lse = where(blind, -math.inf, (safe - shift).exp().sum(-1, keepdim=True).log() + shift)
    weights = where(blind, 0.0, softmax(safe, -1))
    return cat([weights @ v, lse], -1)


@register("attention", compile="kernel", launchers=("attention_forward",))
class Attention(Function):
    """q (B, L, E), k (B, S, E), v (B, S, Ev), bias (Bb, L, S), Bb dividing B, or None -> (B, L, Ev + 1)."""

    @staticmethod
    def forward(ctx, q, k, v, bias, *, scale, causal):
        ctx.scale, ctx.causal = scale, causal
        out = np.empty(q.shape[:2] + (v.shape[2] + 1,), dtype=q.dtype, like=q)
        backend_for(q).attention_forward(_c(q), _c(k), _c(v), _bias_array(bias, q), scale, causal, out)
        ctx.save_for_backward(out, q, k, v, bias)
        return out

    @staticmethod
    def backward(ctx, grad):
        out, q, k, v, bias = ctx.saved_tensors
        res = AttentionBackward.apply(grad, out, q, k, v, bias, scale=ctx.scale, causal=ctx.causal)
        heads, rows, depth = q.shape
        cols, width = v.shape[1:]
        d_q = res[:, : rows * depth].reshape(heads, rows, depth)
        d_k = res[:, rows * depth : (rows + cols) * depth].reshape(heads, cols, depth)
        d_v = res[:, (rows + cols) * depth :].reshape(heads, cols, width)
        return d_q, d_k, d_v, None


@register("attention_backward", compile="kernel", launchers=("attention_backward",))
class AttentionBackward(Function):
    """grad, out (B, L, Ev + 1), q, k, v, bias -> (B, L*E + S*E + S*Ev): dQ, dK, dV per head."""

    @staticmethod
    def forward(ctx, grad, out, q, k, v, bias, *, scale, causal):
        ctx.scale, ctx.causal = scale, causal
        heads, rows, depth = q.shape
        cols, width = v.shape[1:]
        res = np.empty((heads, (rows + cols) * depth + cols * width), dtype=q.dtype, like=q)
        backend_for(q).attention_backward(
            _c(grad), _c(out), _c(q), _c(k), _c(v), _bias_array(bias, q), scale, causal, res
        )
        ctx.save_for_backward(grad, out, q, k, v, bias)
        return res

    @staticmethod
    def backward(ctx, grad_res):
        grad, _out, q, k, v, bias = ctx.saved_tensors
        create_graph = is_grad_enabled()
        leaves = [t if create_graph and t.requires_grad else t.detach().requires_grad_() for t in (grad, q, k, v)]
        with enable_grad():
            out = composed_attention(*leaves[1:], None if bias is None else bias.detach(), ctx.scale, ctx.causal)
            streams = autograd_grad(out, leaves[1:], leaves[0], create_graph=True)
            res = cat([s.reshape(s.shape[0], -1) for s in streams], 1)
            found = autograd_grad(res, leaves, grad_res, create_graph=create_graph, allow_unused=True)
        d_grad, d_q, d_k, d_v = found
        needs = ctx.needs_input_grad
        return tuple(g if need else None for g, need in zip((d_grad, None, d_q, d_k, d_v, None), needs))


def attention(q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None = None, scale: float | None = None, causal: bool = False) -> Tensor:
    """Fused attention over heads: (B, L, Ev + 1) = [softmax(scale q k^T + bias) v, log-sum-exp].

    The bias (an additive float mask) is a constant: no gradient flows to it. Its first dim Bb
    divides B and head b adds ``bias[b % Bb]``: one mask for all heads, one each, or, with heads
    ordered (H, N), one per sequence of N.

    >>> q = numdiff.randn(4, 5, 8)
    >>> tuple(attention(q, q, q, causal=True)[..., :8].shape)
    (4, 5, 8)
    """
    op = "attention"
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor) or t.ndim != 3:
            raise ValueError(f"{op}: {name} must be a 3-D Tensor (B, seq, features), got {getattr(t, 'shape', type(t).__name__)}")
    heads, rows, depth = q.shape
    cols = k.shape[1]
    if tuple(k.shape) != (heads, cols, depth) or v.shape[:2] != (heads, cols):
        raise ValueError(f"{op}: expected q (B, L, E), k (B, S, E), v (B, S, Ev), got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    dtypes = {str(t.dtype) for t in (q, k, v) + (() if bias is None else (bias,))}
    if len(dtypes) != 1 or dtypes.pop() not in ("numdiff.float32", "numdiff.float64"):
        raise TypeError(f"{op}: expected float32 or float64 tensors of one dtype, got {q.dtype!r}, {k.dtype!r}, {v.dtype!r}")
    if bias is not None and (bias.ndim != 3 or tuple(bias.shape[1:]) != (rows, cols) or bias.shape[0] == 0 or heads % bias.shape[0]):
        raise ValueError(f"{op}: bias must have shape (Bb, {rows}, {cols}) with Bb dividing {heads}, got {tuple(bias.shape)}")
    scale = 1.0 / math.sqrt(depth) if scale is None else float(scale)
    return Attention.apply(q, k, v, None if bias is None else bias.detach(), scale=scale, causal=bool(causal))
