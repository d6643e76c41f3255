"""Cases for numdiff/ops/attention.py: the fused attention op against a NumPy softmax (plain,
causal, with a shared and a per-head bias, and with a row that sees no key), and its backward op
(reached only from a backward, so called here as the registered op) against the gradients of
the attention composed from numdiff ops."""

from __future__ import annotations

import math

import numpy as np

import numdiff
from numdiff.ops import attention as fused
from tests.ops.op_cases import Const, OpCase, args, normal

CLOSE = dict(forward_rtol=1e-10, forward_atol=1e-12)


def attention_reference(q, k, v, bias=None, causal=False, scale=None):
    """[softmax(scale q k^T + bias) v, log-sum-exp of each row], 0 and -inf on rows that see no key."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = scale * q @ k.transpose(0, 2, 1)
    if bias is not None:
        scores = scores + bias
    if causal:
        scores = np.where(np.triu(np.ones(scores.shape[1:], bool), 1), -np.inf, scores)
    top = scores.max(-1, keepdims=True)
    blind = np.isneginf(top)
    weights = np.where(blind, 0.0, np.exp(scores - np.where(blind, 0.0, top)))
    total = weights.sum(-1, keepdims=True)
    lse = np.where(blind, -np.inf, np.log(np.where(blind, 1.0, total)) + np.where(blind, 0.0, top))
    return np.concatenate([weights / np.where(blind, 1.0, total) @ v, lse], -1)


def _blind_row_bias(rng):
    bias = rng.standard_normal((1, 3, 4))
    bias[0, 1] = -np.inf  # query 1 sees no key
    return Const(bias)


def _backward(grad, q, k, v):
    out = fused.attention(q.detach(), k.detach(), v.detach(), causal=True, scale=0.5)
    return fused.AttentionBackward.apply(grad, out, q, k, v, None, scale=0.5, causal=True)


def _backward_reference(grad, q, k, v):
    leaves = [numdiff.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = fused.composed_attention(*leaves, None, 0.5, True)
    grads = numdiff.autograd.grad(out, leaves, numdiff.tensor(grad))
    return np.concatenate([g.numpy().reshape(g.shape[0], -1) for g in grads], 1)


CASES = [
    OpCase("attention", "plain", args(normal(2, 3, 4), normal(2, 5, 4), normal(2, 5, 3)),
           fused.attention, attention_reference, **CLOSE),
    OpCase("attention", "causal-scale", args(normal(2, 4, 3), normal(2, 4, 3), normal(2, 4, 2)),
           lambda q, k, v: fused.attention(q, k, v, causal=True, scale=0.3),
           lambda q, k, v: attention_reference(q, k, v, causal=True, scale=0.3), **CLOSE),
    OpCase("attention", "per-head-bias", lambda rng: (rng.standard_normal((2, 3, 2)), rng.standard_normal((2, 4, 2)),
                                                     rng.standard_normal((2, 4, 2)), Const(rng.standard_normal((2, 3, 4)))),
           fused.attention, attention_reference, **CLOSE),
    # Bb dividing B: head b adds bias[b % Bb] (heads ordered (H, N) with one padding mask per sequence).
    OpCase("attention", "bias-per-sequence", lambda rng: (rng.standard_normal((6, 3, 2)), rng.standard_normal((6, 4, 2)),
                                                         rng.standard_normal((6, 4, 2)), Const(rng.standard_normal((2, 3, 4)))),
           fused.attention, lambda q, k, v, b: attention_reference(q, k, v, np.tile(b, (3, 1, 1))), **CLOSE),
    OpCase("attention", "row-that-sees-no-key", lambda rng: (rng.standard_normal((1, 3, 2)), rng.standard_normal((1, 4, 2)),
                                                            rng.standard_normal((1, 4, 2)), _blind_row_bias(rng)),
           lambda q, k, v, b: fused.attention(q, k, v, b)[..., :2], lambda q, k, v, b: attention_reference(q, k, v, b)[..., :2],
           **CLOSE),
    OpCase("attention_backward", "causal", args(normal(2, 3, 3), normal(2, 3, 2), normal(2, 3, 2), normal(2, 3, 2)),
           _backward, _backward_reference, second_order=False, **CLOSE),
]  # fmt: skip
