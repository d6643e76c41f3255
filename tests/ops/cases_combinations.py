"""Cases for logcumsumexp (registered) and the compositions kron, cartesian_prod, block_diag,
median, nanmedian, mode, unfold and fold, with NumPy references."""

from __future__ import annotations

import numpy as np

import numdiff
import numdiff.nn.functional as nf
from numdiff.ops._block_taps import BlockTaps, BlockTapsBackward
from tests.ops.op_cases import OpCase, args, distinct, normal


def _logcumsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    return np.logaddexp.accumulate(x, axis=axis)


def _block_diag(*blocks: np.ndarray) -> np.ndarray:
    blocks = [np.atleast_2d(b) for b in blocks]
    out = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)))
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def _lower_median(x: np.ndarray, axis: int) -> np.ndarray:
    return np.take(np.sort(x, axis=axis), (x.shape[axis] - 1) // 2, axis=axis)


def _unfold(x: np.ndarray, k: int, stride: int, padding: int) -> np.ndarray:
    """im2col by loops: row c * k * k + i * k + j, column oy * ow + ox."""
    n, c, h, w = x.shape
    p = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh, ow = (h + 2 * padding - k) // stride + 1, (w + 2 * padding - k) // stride + 1
    out = np.zeros((n, c * k * k, oh * ow))
    for ch in range(c):
        for i in range(k):
            for j in range(k):
                for oy in range(oh):
                    for ox in range(ow):
                        out[:, ch * k * k + i * k + j, oy * ow + ox] = p[:, ch, oy * stride + i, ox * stride + j]
    return out


BLOCK_TAPS = dict(kernel=(2, 3), stride=(2, 1), dilation=(2, 1), padding=(1, 0))


def _block_positions(kernel, stride, dilation, padding, blocks):
    """(i, j, oy, ox, y, x) of every tap of every block: y, x in the unpadded image (may be outside)."""
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            for oy in range(blocks[0]):
                for ox in range(blocks[1]):
                    yield (i, j, oy, ox, oy * stride[0] + i * dilation[0] - padding[0],
                           ox * stride[1] + j * dilation[1] - padding[1])


def _unfold_dilated(x: np.ndarray, blocks: tuple, kernel, stride, dilation, padding) -> np.ndarray:
    out = np.zeros((*x.shape[:2], *kernel, *blocks))
    for i, j, oy, ox, y, xx in _block_positions(kernel, stride, dilation, padding, blocks):
        if 0 <= y < x.shape[2] and 0 <= xx < x.shape[3]:
            out[:, :, i, j, oy, ox] = x[:, :, y, xx]
    return out


def _fold_dilated(g: np.ndarray, size: tuple, kernel, stride, dilation, padding) -> np.ndarray:
    out = np.zeros((*g.shape[:2], *size))
    for i, j, oy, ox, y, xx in _block_positions(kernel, stride, dilation, padding, g.shape[4:]):
        if 0 <= y < size[0] and 0 <= xx < size[1]:
            out[:, :, y, xx] += g[:, :, i, j, oy, ox]
    return out


def _fold(cols: np.ndarray, size: tuple, k: int, stride: int, padding: int) -> np.ndarray:
    n, rows, _ = cols.shape
    c = rows // (k * k)
    h, w = size
    out = np.zeros((n, c, h + 2 * padding, w + 2 * padding))
    ow = (w + 2 * padding - k) // stride + 1
    for ch in range(c):
        for i in range(k):
            for j in range(k):
                for col in range(cols.shape[2]):
                    oy, ox = divmod(col, ow)
                    out[:, ch, oy * stride + i, ox * stride + j] += cols[:, ch * k * k + i * k + j, col]
    return out[:, :, padding:padding + h, padding:padding + w]


def _mode_reference(x: np.ndarray) -> np.ndarray:
    """Along the last axis: the most frequent value, the smallest on ties."""
    out = []
    for row in x.reshape(-1, x.shape[-1]):
        values, counts = np.unique(row, return_counts=True)
        out.append(values[np.argmax(counts)])
    return np.array(out).reshape(x.shape[:-1])


CASES = [
    OpCase("logcumsumexp", "dim1", args(normal(2, 4)), lambda x: numdiff.logcumsumexp(x, 1),
           lambda x: _logcumsumexp(x, 1)),
    OpCase("logcumsumexp", "method-dim0-wide-range", args(lambda rng: rng.standard_normal((4, 3)) * 20),
           lambda x: x.logcumsumexp(0), lambda x: _logcumsumexp(x, 0)),
    OpCase(None, "kron-2d", args(normal(2, 3), normal(3, 2)), numdiff.kron, np.kron),
    OpCase(None, "kron-mixed-ndim", args(normal(2, 2, 1), normal(3, 2)), lambda a, b: a.kron(b), np.kron),
    OpCase(None, "cartesian_prod", args(normal(2), normal(3)), numdiff.cartesian_prod,
           lambda a, b: np.stack([np.repeat(a, 3), np.tile(b, 2)], axis=1)),
    OpCase(None, "block_diag", args(normal(2, 2), normal(3), normal(1, 2)), numdiff.block_diag, _block_diag),
    OpCase(None, "median-dim", args(distinct(3, 4)), lambda x: numdiff.median(x, 1).values,
           lambda x: _lower_median(x, 1)),
    OpCase(None, "median-global-even", args(distinct(2, 3)), numdiff.median, lambda x: _lower_median(x.reshape(-1), 0)),
    OpCase(None, "nanmedian-keepdim", args(distinct(4, 3)), lambda x: x.nanmedian(0, keepdim=True).values,
           lambda x: _lower_median(x, 0)[None]),
    OpCase(None, "kthvalue-dim", args(distinct(3, 5)), lambda x: numdiff.kthvalue(x, 2, 1).values,
           lambda x: np.sort(x, 1)[:, 1]),
    OpCase(None, "kthvalue-method-keepdim", args(distinct(4, 3)), lambda x: x.kthvalue(4, 0, keepdim=True).values,
           lambda x: np.sort(x, 0)[3:4]),
    # Distinct values (each occurs once: the mode is the smallest), as a perturbation would break ties;
    # tests/ops/test_combinations.py checks ties against torch.
    OpCase(None, "mode", args(distinct(3, 5)), lambda x: numdiff.mode(x).values, _mode_reference),
    OpCase(None, "unfold", args(normal(2, 2, 4, 5)), lambda x: nf.unfold(x, 2, padding=1, stride=2),
           lambda x: _unfold(x, 2, 2, 1)),
    OpCase(
        "block_taps", "stride-dilation-padding", args(normal(2, 2, 5, 4)),
        lambda x: BlockTaps.apply(x, blocks=(3, 2), **BLOCK_TAPS),
        lambda x: _unfold_dilated(x, (3, 2), **BLOCK_TAPS),
    ),
    OpCase(
        "block_taps_backward", "stride-dilation-padding", args(normal(2, 2, 2, 3, 3, 2)),
        lambda g: BlockTapsBackward.apply(g, size=(5, 4), **BLOCK_TAPS),
        lambda g: _fold_dilated(g, (5, 4), **BLOCK_TAPS),
    ),
    OpCase(None, "fold", args(normal(1, 8, 6)), lambda x: nf.fold(x, (3, 4), 2, padding=1, stride=2),
           lambda x: _fold(x, (3, 4), 2, 2, 1)),
]
