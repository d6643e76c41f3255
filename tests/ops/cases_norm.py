"""Cases for numdiff/ops/norm.py: the per-group moments, the fused group normalisation
(BatchNorm's, InstanceNorm's, GroupNorm's and LayerNorm's views, with and without a scale and
shift) against a NumPy normalisation, and its backward op (reached only from a backward, so called
here as the registered op) against the gradients of the normalisation composed from numdiff ops."""

from __future__ import annotations

import numpy as np

import numdiff
from numdiff.ops import norm as fused
from tests.ops.op_cases import OpCase, args, normal

CLOSE = dict(forward_rtol=1e-10, forward_atol=1e-12)
EPS = 1e-5


def grouped_norm_reference(view, x, weight=None, bias=None, eps=EPS):
    """x seen as view (B, N, G, K, S), normalised per (b, g) over (n, k, s), then scaled and shifted
    per (g, k) by the per-channel weight and bias; in x's shape."""
    xv = x.reshape(view)
    mean = xv.mean((1, 3, 4), keepdims=True)
    out = (xv - mean) / np.sqrt(((xv - mean) ** 2).mean((1, 3, 4), keepdims=True) + eps)
    per_channel = (1, 1, view[2], view[3], 1)
    if weight is not None:
        out = out * weight.reshape(per_channel)
    if bias is not None:
        out = out + bias.reshape(per_channel)
    return out.reshape(x.shape)


def _norm_case(name, view, shape, *params):
    return OpCase("grouped_norm", name, args(normal(*shape), *(normal(*p) for p in params)),
                  lambda x, *ps: fused.GroupedNorm.apply(x, *ps, *(None,) * (2 - len(ps)), view=view, eps=EPS),
                  lambda x, *ps: grouped_norm_reference(view, x, *ps), **CLOSE)  # fmt: skip


def _backward(view):
    def run(grad, x, weight):
        xv = x.detach().reshape(view)
        mean = xv.mean((1, 3, 4))
        rstd = (xv.var((1, 3, 4), correction=0) + EPS).rsqrt()
        return fused.GroupedNormBackward.apply(grad, x, weight, mean, rstd, view=view, eps=EPS)

    return run


def _backward_reference(view):
    def reference(grad, x, weight):
        leaves = [numdiff.tensor(a, requires_grad=True) for a in (x, weight)]
        bias = numdiff.zeros(weight.shape, dtype=numdiff.float64, requires_grad=True)
        out = fused.composed_grouped_norm(leaves[0], view, leaves[1], bias, EPS)
        grads = numdiff.autograd.grad(out, leaves + [bias], numdiff.tensor(grad))
        return np.concatenate([g.numpy().reshape(-1) for g in grads])

    return reference


def _moments_reference(x):
    return np.stack([x.mean((1, 3, 4)), x.var((1, 3, 4))])


def _running_stat_reference(row, momentum, factor):
    def reference(running, moments):
        return running * (1 - momentum) + moments[row, 0] * factor * momentum

    return reference


def _running_stat_case(name, row, momentum, factor):
    return OpCase("running_stat", name, args(normal(5), normal(2, 1, 5)),
                  lambda r, m: fused.RunningStat.apply(r, m, row=row, momentum=momentum, factor=factor),
                  _running_stat_reference(row, momentum, factor), **CLOSE)  # fmt: skip


CASES = [
    _running_stat_case("mean-row", 0, 0.1, 1.0),
    _running_stat_case("unbiased-variance-row", 1, 0.3, 8 / 7),
    _norm_case("batch-norm-view-affine", (1, 4, 3, 1, 5), (4, 3, 5), (3,), (3,)),
    _norm_case("instance-norm-view", (3, 1, 2, 1, 6), (3, 2, 2, 3)),
    _norm_case("group-norm-view-weight-only", (2, 1, 2, 3, 4), (2, 6, 4), (6,)),
    _norm_case("layer-norm-view", (3, 1, 1, 4, 1), (3, 2, 2), (2, 2), (2, 2)),
    OpCase("grouped_moments", "batch-norm-view", args(normal(1, 4, 3, 1, 5)), fused.GroupedMoments.apply,
           _moments_reference, **CLOSE),
    OpCase("grouped_moments", "group-norm-view", args(normal(2, 1, 2, 3, 4)), fused.GroupedMoments.apply,
           _moments_reference, **CLOSE),
    OpCase("grouped_norm_backward", "layer-norm-view", args(normal(3, 4), normal(3, 4), normal(4)),
           _backward((3, 1, 1, 4, 1)), _backward_reference((3, 1, 1, 4, 1)), second_order=False, **CLOSE),
    OpCase("grouped_norm_backward", "group-norm-view", args(normal(2, 4, 2, 3), normal(2, 4, 2, 3), normal(4)),
           _backward((2, 2, 2, 2, 3)), _backward_reference((2, 2, 2, 2, 3)), second_order=False, **CLOSE),
]  # fmt: skip
