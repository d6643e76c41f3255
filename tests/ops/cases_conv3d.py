"""Cases for numdiff/ops/_axis_taps.py (the registered pair conv3d is built on), and for the 3-d
convolutions and pooling of numdiff/ops/conv3d.py and pool3d.py, which are compositions of those
and the 2-d ops: each checked against a direct NumPy loop over the 3-d window, with gradcheck and
gradgradcheck (and replayed on CUDA by tests/cuda/test_op_cases_cuda.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np

import numdiff
from numdiff.ops._axis_taps import AxisTaps, AxisTapsBackward
from tests.ops.op_cases import OpCase, args, distinct, normal

F = numdiff.nn.functional
CLOSE = dict(forward_rtol=1e-10, forward_atol=1e-12)


def _taps_ref(x, taps, stride, dilation, pad, out_size):
    out = np.zeros((x.shape[0], out_size, taps, x.shape[2]))
    for o, k in itertools.product(range(out_size), range(taps)):
        p = o * stride + k * dilation - pad
        if 0 <= p < x.shape[1]:
            out[:, o, k] = x[:, p]
    return out


def _taps_adjoint_ref(g, taps, stride, dilation, pad, size):
    out = np.zeros((g.shape[0], size, g.shape[3]))
    for o, k in itertools.product(range(g.shape[1]), range(taps)):
        p = o * stride + k * dilation - pad
        if 0 <= p < size:
            out[:, p] += g[:, o, k]
    return out


def conv3d_ref(x, w, b, stride, padding, dilation, groups):
    """Direct 3-d cross-correlation; padding is (lo, hi) per axis, flattened."""
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((padding[2 * i], padding[2 * i + 1]) for i in range(3)))
    kernel = w.shape[2:]
    out_size = [
        (xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(3)
    ]
    n, co = x.shape[0], w.shape[0]
    cg, cog = w.shape[1], co // groups
    out = np.zeros((n, co, *out_size))
    for tap in itertools.product(*(range(k) for k in kernel)):
        window = tuple(
            slice(tap[i] * dilation[i], tap[i] * dilation[i] + stride[i] * (out_size[i] - 1) + 1, stride[i])
            for i in range(3)
        )
        patch = xp[(slice(None), slice(None)) + window].reshape(n, groups, cg, *out_size)
        weights = w[(slice(None), slice(None)) + tap].reshape(groups, cog, cg)
        out += np.einsum("ngcdhw,goc->ngodhw", patch, weights).reshape(n, co, *out_size)
    return out if b is None else out + b.reshape(-1, 1, 1, 1)


def conv_transpose3d_ref(x, w, b, stride, padding, output_padding, dilation, groups):
    """Scatter of every input voxel times the kernel, then the padding cropped off."""
    n, c_in = x.shape[:2]
    kernel = w.shape[2:]
    cog = w.shape[1]
    full = [(x.shape[2 + i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 for i in range(3)]
    out = np.zeros((n, cog * groups, *(f + e for f, e in zip(full, output_padding))))
    xg = x.reshape(n, groups, c_in // groups, *x.shape[2:])
    wg = w.reshape(groups, c_in // groups, cog, *kernel)
    for tap in itertools.product(*(range(k) for k in kernel)):
        contribution = np.einsum("ngcdhw,gco->ngodhw", xg, wg[(slice(None),) * 3 + tap])
        window = tuple(
            slice(tap[i] * dilation[i], tap[i] * dilation[i] + stride[i] * (x.shape[2 + i] - 1) + 1, stride[i])
            for i in range(3)
        )
        out[(slice(None), slice(None)) + window] += contribution.reshape(n, cog * groups, *x.shape[2:])
    size = [f - 2 * p + e for f, p, e in zip(full, padding, output_padding)]
    out = out[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, size))]
    return out if b is None else out + b.reshape(-1, 1, 1, 1)


def _windows(shape, kernel, stride, padding, dilation, ceil_mode):
    """Per axis, each output's in-image taps and its padded window length (PyTorch's rules)."""
    axes = []
    for size, k, s, p, d in zip(shape, kernel, stride, padding, dilation):
        span = size + 2 * p - d * (k - 1) - 1
        count = (span + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (count - 1) * s >= size + p:
            count -= 1
        axes.append([
            ([o * s - p + t * d for t in range(k) if 0 <= o * s - p + t * d < size],
             min(o * s - p + k, size + p) - (o * s - p))
            for o in range(count)
        ])  # fmt: skip
    return axes


def max_pool3d_ref(x, kernel, stride, padding, dilation, ceil_mode):
    axes = _windows(x.shape[2:], kernel, stride, padding, dilation, ceil_mode)
    out = np.empty(x.shape[:2] + tuple(len(a) for a in axes))
    for o in itertools.product(*(range(len(a)) for a in axes)):
        taps = [axes[i][o[i]][0] for i in range(3)]
        block = x[:, :, taps[0]][:, :, :, taps[1]][..., taps[2]]
        out[(slice(None), slice(None)) + o] = block.reshape(*x.shape[:2], -1).max(axis=2)
    return out


def avg_pool3d_ref(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    axes = _windows(x.shape[2:], kernel, stride, padding, (1, 1, 1), ceil_mode)
    out = np.empty(x.shape[:2] + tuple(len(a) for a in axes))
    for o in itertools.product(*(range(len(a)) for a in axes)):
        taps = [axes[i][o[i]][0] for i in range(3)]
        block = x[:, :, taps[0]][:, :, :, taps[1]][..., taps[2]]
        if divisor_override:
            div = divisor_override
        elif count_include_pad:
            div = math.prod(axes[i][o[i]][1] for i in range(3))
        else:
            div = math.prod(len(t) for t in taps)
        out[(slice(None), slice(None)) + o] = block.reshape(*x.shape[:2], -1).sum(axis=2) / div
    return out


def adaptive_pool3d_ref(x, size, reduce):
    bounds = [
        [((o * n) // m, -((-(o + 1) * n) // m)) for o in range(m)] for n, m in zip(x.shape[2:], size)
    ]
    out = np.empty(x.shape[:2] + tuple(size))
    for o in itertools.product(*(range(m) for m in size)):
        (d0, d1), (h0, h1), (w0, w1) = (bounds[i][o[i]] for i in range(3))
        out[(slice(None), slice(None)) + o] = reduce(x[:, :, d0:d1, h0:h1, w0:w1].reshape(*x.shape[:2], -1), axis=2)
    return out


def max_unpool_ref(x, indices, size):
    out = np.zeros(x.shape[:2] + (int(np.prod(size)),))
    for n, c in np.ndindex(*x.shape[:2]):
        out[n, c, indices[n, c].reshape(-1)] = x[n, c].reshape(-1)
    return out.reshape(x.shape[:2] + tuple(size))


TAPS = dict(taps=3, stride=2, dilation=2, pad=2)
# max_pool3d(2, padding=1)'s argmax of a 3x4x3 volume without ties (pooled 2x3x2)
UNPOOL3D_INDICES = F.max_pool3d(numdiff.tensor(np.random.default_rng(3).permutation(72).astype(float).reshape(1, 2, 3, 4, 3)), 2,
                                padding=1, return_indices=True)[1].numpy()

CASES = [
    OpCase(
        "axis_taps", "stride-dilation-pad", args(normal(2, 7, 3)),
        lambda x: AxisTaps.apply(x, out_size=4, **TAPS), lambda x: _taps_ref(x, out_size=4, **TAPS), **CLOSE,
    ),
    OpCase(
        "axis_taps_backward", "stride-dilation-pad", args(normal(2, 4, 3, 3)),
        lambda g: AxisTapsBackward.apply(g, size=7, **TAPS), lambda g: _taps_adjoint_ref(g, size=7, **TAPS),
        **CLOSE,
    ),
    OpCase(
        None, "conv3d-stride-pad-dilation-groups-bias", args(normal(2, 4, 4, 3, 5), normal(4, 2, 2, 2, 3), normal(4)),
        lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 2), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2),
        lambda x, w, b: conv3d_ref(x, w, b, (1, 2, 2), (1, 1, 0, 0, 1, 1), (2, 1, 1), 2), **CLOSE,
    ),
    OpCase(
        None, "conv3d-same-unbatched", args(normal(2, 3, 4, 3), normal(3, 2, 2, 3, 1)),
        lambda x, w: F.conv3d(x, w, padding="same"),
        lambda x, w: conv3d_ref(x[None], w, None, (1, 1, 1), (0, 1, 1, 1, 0, 0), (1, 1, 1), 1)[0], **CLOSE,
    ),
    OpCase(
        None, "conv_transpose3d-stride-output-padding-groups-bias",
        args(normal(1, 4, 2, 3, 2), normal(4, 1, 2, 3, 2), normal(2)),
        lambda x, w, b: F.conv_transpose3d(x, w, b, stride=(2, 1, 2), padding=(1, 1, 0), output_padding=(1, 0, 1),
                                           groups=2, dilation=(1, 1, 2)),
        lambda x, w, b: conv_transpose3d_ref(x, w, b, (2, 1, 2), (1, 1, 0), (1, 0, 1), (1, 1, 2), 2), **CLOSE,
    ),
    OpCase(
        None, "max_pool3d-ceil-pad-dilation", args(distinct(2, 2, 5, 4, 5)),
        lambda x: F.max_pool3d(x, (3, 2, 2), (2, 1, 2), (1, 1, 0), (1, 2, 1), ceil_mode=True),
        lambda x: max_pool3d_ref(x, (3, 2, 2), (2, 1, 2), (1, 1, 0), (1, 2, 1), True), **CLOSE,
    ),
    OpCase(
        None, "adaptive_max_pool3d", args(distinct(1, 2, 5, 3, 4)),
        lambda x: F.adaptive_max_pool3d(x, (2, 3, 3)), lambda x: adaptive_pool3d_ref(x, (2, 3, 3), np.max), **CLOSE,
    ),
    OpCase(
        None, "avg_pool3d-ceil-exclude-pad", args(normal(1, 2, 5, 4, 5)),
        lambda x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        lambda x: avg_pool3d_ref(x, (3, 3, 3), (2, 2, 2), (1, 1, 1), True, False, None), **CLOSE,
    ),
    OpCase(
        None, "avg_pool3d-divisor-override", args(normal(2, 1, 4, 5, 3)),
        lambda x: F.avg_pool3d(x, (2, 3, 2), (1, 2, 1), (1, 1, 0), divisor_override=5),
        lambda x: avg_pool3d_ref(x, (2, 3, 2), (1, 2, 1), (1, 1, 0), False, True, 5), **CLOSE,
    ),
    OpCase(
        None, "adaptive_avg_pool3d", args(normal(1, 2, 5, 3, 4)),
        lambda x: F.adaptive_avg_pool3d(x, (2, None, 3)), lambda x: adaptive_pool3d_ref(x, (2, 3, 3), np.mean),
        **CLOSE,
    ),
    OpCase(
        None, "max_unpool3d-padding", args(normal(1, 2, 2, 3, 2)),
        lambda x: F.max_unpool3d(x, numdiff.tensor(UNPOOL3D_INDICES).to(x.device), 2, padding=1, output_size=(3, 4, 3)),
        lambda x: max_unpool_ref(x, UNPOOL3D_INDICES, (3, 4, 3)), **CLOSE,
    ),
    OpCase(
        None, "lp_pool3d-p3-ceil", args(lambda rng: rng.uniform(0.5, 2.0, (1, 2, 3, 4, 3))),
        lambda x: F.lp_pool3d(x, 3, 2, ceil_mode=True),
        # PyTorch's rule: the window mean times the full window size, so a clipped last window is scaled up
        lambda x: (avg_pool3d_ref(x**3, (2, 2, 2), (2, 2, 2), (0, 0, 0), True, True, None) * 8) ** (1 / 3), **CLOSE,
    ),
    OpCase(
        None, "lp_pool2d-p2-stride", args(normal(1, 2, 4, 5)),
        lambda x: F.lp_pool2d(x, 2, (2, 3), 1),
        lambda x: avg_pool3d_ref(x[:, :, None] ** 2, (1, 2, 3), (1, 1, 1), (0, 0, 0), False, True, 1)[:, :, 0] ** 0.5,
        **CLOSE,
    ),
    OpCase(
        None, "adaptive_max_pool1d-unbatched", args(distinct(2, 7)),
        lambda x: F.adaptive_max_pool1d(x, 3),
        lambda x: adaptive_pool3d_ref(x[None, :, None, None], (1, 1, 3), np.max)[0, :, 0, 0], **CLOSE,
    ),
]  # fmt: skip
