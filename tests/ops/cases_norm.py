"""Cases for numdiff/ops/norm.py: the per-group moments, the fused group normalisation (BatchNorm's, InstanceNorm's and
GroupNorm's views, with and without a scale and shift) against a NumPy normalisation, and its
backward op (reached only from a backward, so called here as the registered op) against the
gradients of the normalisation composed from numdiff ops."""

from __future__ import annotations

import numpy as np

import numdiff
from numdiff.ops import norm as fused
from tests.ops.op_cases import OpCase, args, normal

CLOSE = dict(forward_rtol=1e-10, forward_atol=1e-12)
EPS = 1e-5


def grouped_norm_reference(x, weight=None, bias=None, eps=EPS):
    """x (B, N, G, K, S) normalised per (b, g) over (n, k, s), then scaled and shifted per (g, k)."""
    mean = x.mean((1, 3, 4), keepdims=True)
    out = (x - mean) / np.sqrt(((x - mean) ** 2).mean((1, 3, 4), keepdims=True) + eps)
    if weight is not None:
        out = out * weight[None, None, :, :, None]
    if bias is not None:
        out = out + bias[None, None, :, :, None]
    return out


def _norm(x, weight=None, bias=None):
    return fused.GroupedNorm.apply(x, weight, bias, eps=EPS)


def _backward(grad, x, weight):
    mean = x.detach().mean((1, 3, 4))
    rstd = (x.detach().var((1, 3, 4), correction=0) + EPS).rsqrt()
    return fused.GroupedNormBackward.apply(grad, x, weight, mean, rstd, eps=EPS)


def _backward_reference(grad, x, weight):
    leaves = [numdiff.tensor(a, requires_grad=True) for a in (x, weight)]
    bias = numdiff.zeros(weight.shape, dtype=numdiff.float64, requires_grad=True)
    out = fused.composed_grouped_norm(*leaves, bias, EPS)
    grads = numdiff.autograd.grad(out, leaves + [bias], numdiff.tensor(grad))
    return np.concatenate([g.numpy().reshape(-1) for g in grads])


CASES = [
    OpCase("grouped_norm", "batch-norm-view-affine", args(normal(1, 4, 3, 1, 5), normal(3, 1), normal(3, 1)),
           _norm, grouped_norm_reference, **CLOSE),
    OpCase("grouped_norm", "instance-norm-view", args(normal(3, 1, 2, 1, 6)), _norm, grouped_norm_reference, **CLOSE),
    OpCase("grouped_norm", "group-norm-view-weight-only", args(normal(2, 1, 2, 3, 4), normal(2, 3)),
           _norm, grouped_norm_reference, **CLOSE),
    OpCase("grouped_norm", "layer-norm-view", args(normal(3, 1, 1, 4, 1), normal(1, 4), normal(1, 4)),
           _norm, grouped_norm_reference, **CLOSE),
    OpCase("grouped_moments", "batch-norm-view", args(normal(1, 4, 3, 1, 5)), fused.GroupedMoments.apply,
           lambda x: np.stack([x.mean((1, 3, 4)), x.var((1, 3, 4))]), **CLOSE),
    OpCase("grouped_moments", "group-norm-view", args(normal(2, 1, 2, 3, 4)), fused.GroupedMoments.apply,
           lambda x: np.stack([x.mean((1, 3, 4)), x.var((1, 3, 4))]), **CLOSE),
    OpCase("grouped_norm_backward", "layer-norm-view", args(normal(3, 1, 1, 4, 1), normal(3, 1, 1, 4, 1), normal(1, 4)),
           _backward, _backward_reference, second_order=False, **CLOSE),
    OpCase("grouped_norm_backward", "group-norm-view", args(normal(2, 2, 2, 2, 3), normal(2, 2, 2, 2, 3), normal(2, 2)),
           _backward, _backward_reference, second_order=False, **CLOSE),
]  # fmt: skip
