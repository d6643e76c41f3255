"""Cases for numdiff/ops/pool.py: every pooling op and the scatter/gather and adjoint ops its
backward is made of (called through the registered op where only a backward reaches it)."""

from __future__ import annotations

import numpy as np

import numdiff
from numdiff.ops.pool import AdaptiveAvgPool2dBackward, AvgPool2dBackward, MaxPoolGather, MaxPoolScatter
from tests.kernels import kernel_reference as ref
from tests.ops.op_cases import OpCase, args, constant, distinct, normal

F = numdiff.nn.functional
CLOSE = dict(forward_rtol=1e-12, forward_atol=1e-12)

# A fixed input with no ties, and its 3x3/stride-2/pad-1/ceil_mode argmax (windows start in padding).
POOL_INPUT = ((np.random.default_rng(7).permutation(2 * 2 * 6 * 5) - 30) * 0.25).reshape(2, 2, 6, 5)
_, POOL_INDICES = ref.max_pool2d(POOL_INPUT, (3, 3), (2, 2), (1, 1), (1, 1), True)


def _avg(k, s, p, ceil_mode, cip, div):
    return dict(
        kernel_size=k, stride=s, padding=p, ceil_mode=ceil_mode, count_include_pad=cip, divisor_override=div
    )


CASES = [
    OpCase(
        "max_pool2d", "ceil-pad-dilation", args(distinct(2, 2, 7, 6)),
        lambda x: F.max_pool2d(x, (3, 2), (2, 2), (1, 1), (1, 2), ceil_mode=True),
        lambda x: ref.max_pool2d(x, (3, 2), (2, 2), (1, 1), (1, 2), True)[0], **CLOSE,
    ),
    OpCase(
        "max_pool2d", "max_pool1d-unbatched", args(distinct(3, 9)),
        lambda x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True),
        lambda x: ref.max_pool2d(x[None, :, None], (1, 3), (1, 2), (0, 1), (1, 1), True)[0][0, :, 0], **CLOSE,
    ),
    OpCase(
        "adaptive_max_pool2d", "5x7-to-3x2", args(distinct(1, 2, 5, 7)),
        lambda x: F.adaptive_max_pool2d(x, (3, 2)), lambda x: ref.adaptive_max_pool2d(x, (3, 2))[0], **CLOSE,
    ),
    OpCase(
        "max_pool_scatter", "ceil-pad", args(normal(2, 2, 4, 3)),
        lambda g: MaxPoolScatter.apply(g, indices=POOL_INDICES, input_shape=POOL_INPUT.shape),
        lambda g: ref.scatter_planes(g, POOL_INDICES, POOL_INPUT.shape), **CLOSE,
    ),
    OpCase(
        "max_pool_gather", "ceil-pad", args(normal(2, 2, 6, 5)),
        lambda src: MaxPoolGather.apply(src, indices=POOL_INDICES),
        lambda src: np.take_along_axis(src.reshape(2, 2, -1), POOL_INDICES.reshape(2, 2, -1), 2).reshape(2, 2, 4, 3),
        **CLOSE,
    ),
    OpCase(
        "avg_pool2d", "ceil-window-starts-in-padding", args(normal(2, 2, 5, 5)),
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
        lambda x: ref.avg_pool2d(x, (3, 3), (2, 2), (1, 1), True, True, None), **CLOSE,
    ),
    OpCase(
        "avg_pool2d", "exclude-pad-rectangular", args(normal(1, 2, 7, 4)),
        lambda x: F.avg_pool2d(x, (2, 3), (3, 2), 1, ceil_mode=True, count_include_pad=False),
        lambda x: ref.avg_pool2d(x, (2, 3), (3, 2), (1, 1), True, False, None), **CLOSE,
    ),
    OpCase(
        "avg_pool2d", "divisor-override", args(normal(1, 1, 4, 6)),
        lambda x: F.avg_pool2d(x, 2, divisor_override=3),
        lambda x: ref.avg_pool2d(x, (2, 2), (2, 2), (0, 0), False, True, 3), **CLOSE,
    ),
    OpCase(
        "avg_pool2d", "avg_pool1d", args(normal(2, 2, 9)),
        lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        lambda x: ref.avg_pool2d(x[:, :, None], (1, 3), (1, 2), (0, 1), True, False, None)[:, :, 0], **CLOSE,
    ),
    OpCase(
        "avg_pool2d_backward", "ceil-exclude-pad", args(normal(2, 2, 3, 3), constant((2, 2, 5, 5))),
        lambda g, shape: AvgPool2dBackward.apply(g, input_shape=shape, **_avg((3, 3), (2, 2), (1, 1), True, False, None)),
        lambda g, shape: ref.avg_pool2d_backward(g, shape, (3, 3), (2, 2), (1, 1), True, False, None), **CLOSE,
    ),
    OpCase(
        "adaptive_avg_pool2d", "5x7-to-3x2", args(normal(1, 2, 5, 7)),
        lambda x: F.adaptive_avg_pool2d(x, (3, 2)), lambda x: ref.adaptive_avg_pool2d(x, (3, 2)), **CLOSE,
    ),
    OpCase(
        "adaptive_avg_pool2d", "adaptive_avg_pool1d", args(normal(2, 3, 5)),
        lambda x: F.adaptive_avg_pool1d(x, 3), lambda x: ref.adaptive_avg_pool2d(x[:, :, None], (1, 3))[:, :, 0],
        **CLOSE,
    ),
    OpCase(
        "adaptive_avg_pool2d_backward", "3x2-to-5x7", args(normal(1, 2, 3, 2), constant((1, 2, 5, 7))),
        lambda g, shape: AdaptiveAvgPool2dBackward.apply(g, input_shape=shape),
        lambda g, shape: ref.adaptive_avg_pool2d_backward(g, shape), **CLOSE,
    ),
]  # fmt: skip
