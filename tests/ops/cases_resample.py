"""Cases for numdiff/ops/_axis_blend.py (the registered pair interpolate is built on) and for
interpolate's modes composed of it: each checked against a NumPy reference, with gradcheck and
gradgradcheck (and replayed on CUDA by tests/cuda/test_op_cases_cuda.py)."""

from __future__ import annotations

import numpy as np

import numdiff
from numdiff.ops._axis_blend import AxisBlend, AxisBlendBackward
from tests.ops.op_cases import OpCase, args, normal

F = numdiff.nn.functional
CLOSE = dict(forward_rtol=1e-10, forward_atol=1e-12)

# Three output rows from four source rows: two taps each, a repeated row and a clamped edge.
INDEX = np.array([[0, 1], [2, 2], [3, 1]])
WEIGHT = np.array([[0.25, 0.75], [0.5, -1.5], [1.0, 0.125]])


def _blend_ref(x, index, weight):
    return np.einsum("ok,bokr->bor", weight, x[:, index])


def _adjoint_ref(g, index, weight, size):
    out = np.zeros((g.shape[0], size, g.shape[2]))
    for o in range(index.shape[0]):
        for k in range(index.shape[1]):
            out[:, index[o, k]] += weight[o, k] * g[:, o]
    return out


def _bilinear_ref(x, out_h, out_w):
    """align_corners=True bilinear, written directly from the definition."""
    n_h, n_w = x.shape[2:]
    out = np.zeros(x.shape[:2] + (out_h, out_w))
    for oh in range(out_h):
        h = oh * (n_h - 1) / (out_h - 1)
        h0 = min(int(np.floor(h)), n_h - 2)
        for ow in range(out_w):
            w = ow * (n_w - 1) / (out_w - 1)
            w0 = min(int(np.floor(w)), n_w - 2)
            a, b = h - h0, w - w0
            out[..., oh, ow] = ((1 - a) * (1 - b) * x[..., h0, w0] + (1 - a) * b * x[..., h0, w0 + 1]
                                + a * (1 - b) * x[..., h0 + 1, w0] + a * b * x[..., h0 + 1, w0 + 1])  # fmt: skip
    return out


def _area3d_ref(x, size):
    out = np.zeros(x.shape[:2] + size)
    for o in np.ndindex(*size):
        window = tuple(slice(i * n // m, -(-(i + 1) * n // m)) for i, n, m in zip(o, x.shape[2:], size))
        out[(slice(None), slice(None)) + o] = x[(slice(None), slice(None)) + window].mean(axis=(2, 3, 4))
    return out


CASES = [
    OpCase(
        "axis_blend", "two-taps-repeated-and-clamped", args(normal(2, 4, 3)),
        lambda x: AxisBlend.apply(x, index=INDEX, weight=WEIGHT), lambda x: _blend_ref(x, INDEX, WEIGHT), **CLOSE,
    ),
    OpCase(
        "axis_blend_backward", "two-taps-repeated-and-clamped", args(normal(2, 3, 3)),
        lambda g: AxisBlendBackward.apply(g, index=INDEX, weight=WEIGHT, size=4),
        lambda g: _adjoint_ref(g, INDEX, WEIGHT, 4), **CLOSE,
    ),
    OpCase(
        None, "interpolate-bilinear-align-corners", args(normal(1, 2, 3, 4)),
        lambda x: F.interpolate(x, size=(5, 3), mode="bilinear", align_corners=True),
        lambda x: _bilinear_ref(x, 5, 3), **CLOSE,
    ),
    OpCase(
        None, "interpolate-area-3d", args(normal(1, 2, 3, 5, 4)),
        lambda x: F.interpolate(x, size=(2, 3, 3), mode="area"), lambda x: _area3d_ref(x, (2, 3, 3)), **CLOSE,
    ),
]
