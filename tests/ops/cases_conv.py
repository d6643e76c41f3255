"""Cases for numdiff/ops/conv.py: conv2d, conv_transpose2d and conv2d_weight_grad, each of which
is the others' derivative, through the public functions and (for the weight gradient, which only
a backward reaches) the registered op itself."""

from __future__ import annotations

import numdiff
from numdiff.ops.conv import Conv2dWeightGrad
from tests.kernels import kernel_reference as ref
from tests.ops.op_cases import OpCase, args, normal

F = numdiff.nn.functional
CLOSE = dict(forward_rtol=1e-10, forward_atol=1e-12)


def _transpose_ref(x, w, b, stride, padding, output_padding, dilation, groups):
    """conv_transpose2d as the adjoint of conv2d, with output_padding trimming the bottom/right pad."""
    kh, kw = w.shape[2:]
    size = tuple(
        (n - 1) * s - 2 * p + d * (k - 1) + e + 1
        for n, s, p, d, k, e in zip(x.shape[2:], stride, padding, dilation, (kh, kw), output_padding)
    )
    sides = (padding[0], padding[0] - output_padding[0], padding[1], padding[1] - output_padding[1])
    out = ref.conv2d_backward_input(
        x, w, (x.shape[0], w.shape[1] * groups) + size, stride, sides, dilation, groups
    )
    return out if b is None else out + b.reshape(1, -1, 1, 1)


CASES = [
    OpCase(
        "conv2d", "stride-pad-dilation-groups-bias", args(normal(2, 4, 5, 6), normal(6, 2, 3, 2), normal(6)),
        lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2),
        lambda x, w, b: ref.conv2d(x, w, b, (2, 1), (1, 1, 0, 0), (1, 2), 2), **CLOSE,
    ),
    OpCase(
        "conv2d", "same-depthwise", args(normal(1, 3, 4, 5), normal(3, 1, 2, 3)),
        lambda x, w: F.conv2d(x, w, padding="same", groups=3),
        lambda x, w: ref.conv2d(x, w, None, (1, 1), (0, 1, 1, 1), (1, 1), 3), **CLOSE,
    ),
    OpCase(
        "conv2d", "pointwise-unbatched", args(normal(3, 3, 4), normal(2, 3, 1, 1), normal(2)),
        F.conv2d, lambda x, w, b: ref.conv2d(x[None], w, b, (1, 1), (0, 0, 0, 0), (1, 1), 1)[0], **CLOSE,
    ),
    OpCase(
        "conv2d", "conv1d", args(normal(2, 2, 7), normal(3, 2, 3), normal(3)),
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=2, dilation=2),
        lambda x, w, b: ref.conv2d(x[:, :, None], w[:, :, None], b, (1, 2), (0, 0, 2, 2), (1, 2), 1)[:, :, 0],
        **CLOSE,
    ),
    OpCase(
        "conv_transpose2d", "stride-output-padding-groups-bias",
        args(normal(2, 4, 3, 3), normal(4, 1, 3, 2), normal(2)),
        lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2, dilation=(1, 2)),
        lambda x, w, b: _transpose_ref(x, w, b, (2, 2), (1, 1), (1, 1), (1, 2), 2), **CLOSE,
    ),
    OpCase(
        "conv_transpose2d", "conv_transpose1d", args(normal(1, 2, 4), normal(2, 3, 3)),
        lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=1, output_padding=2),
        lambda x, w: _transpose_ref(x[:, :, None], w[:, :, None], None, (1, 3), (0, 1), (0, 2), (1, 1), 1)[:, :, 0],
        **CLOSE,
    ),
    OpCase(
        "conv2d_weight_grad", "stride-pad-groups", args(normal(2, 4, 5, 5), normal(2, 6, 3, 2)),
        lambda x, g: Conv2dWeightGrad.apply(
            x, g, size=(2, 3), stride=(2, 2), padding=(1, 1, 0, 1), dilation=(1, 1), groups=2
        ),
        lambda x, g: ref.conv2d_backward_weight(x, g, (6, 2, 2, 3), (2, 2), (1, 1, 0, 1), (1, 1), 2), **CLOSE,
    ),
]  # fmt: skip
