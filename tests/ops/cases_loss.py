"""Cases for the loss primitives in numdiff/ops/loss.py (binary_cross_entropy, mse_loss_mean) and
numdiff/ops/class_loss.py (nll_loss, cross_entropy over class indices)."""

from __future__ import annotations

import numpy as np

import numdiff
from tests.ops.op_cases import Const, OpCase, args, constant, normal, uniform

F = numdiff.nn.functional


def _nll(log_probs, target, weight=None, ignore_index=-100, reduction="mean"):
    """NumPy nll_loss over (N, C, ...) log-probabilities, entry by entry."""
    classes = log_probs.shape[1]
    weight = np.ones(classes) if weight is None else weight
    moved = np.moveaxis(log_probs, 1, -1).reshape(-1, classes)
    flat = target.reshape(-1)
    losses, weights = np.zeros(flat.shape), np.zeros(flat.shape)
    for i, t in enumerate(flat):
        if t != ignore_index:
            losses[i], weights[i] = -weight[t] * moved[i, t], weight[t]
    if reduction == "none":
        return losses.reshape(target.shape)
    return losses.sum() if reduction == "sum" else losses.sum() / weights.sum()


def _log_softmax(x):
    shifted = x - x.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _cross_entropy(x, target, weight=None, ignore_index=-100, reduction="mean", smoothing=0.0):
    """NumPy cross_entropy with PyTorch's label smoothing: (1 - ls) * nll + ls / C * smooth."""
    log_probs = _log_softmax(x)
    nll = _nll(log_probs, target, weight, ignore_index, reduction)
    classes = x.shape[1]
    w = np.ones(classes) if weight is None else weight
    kept = target != ignore_index
    smooth = -(np.moveaxis(log_probs, 1, -1) * w).sum(-1) * kept
    if reduction == "mean":
        smooth = smooth.sum() / (w[np.where(kept, target, 0)] * kept).sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - smoothing) * nll + smoothing / classes * smooth


_TARGET = np.array([2, 0, 1, 2])
_WEIGHT = np.array([0.5, 2.0, 1.5])
_IGNORED = np.array([[1, -100], [0, 2]])


def _bce(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    return -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log(1 - x), -100))


CASES = [
    # Both inputs differentiable: the gradient to the probabilities and to the soft target.
    OpCase("binary_cross_entropy", "soft-target", args(uniform(0.1, 0.9, 2, 3), uniform(0.0, 1.0, 2, 3)),
           lambda x, t: numdiff.nn.functional.binary_cross_entropy(x, t, reduction="none"), _bce),
    OpCase("binary_cross_entropy", "reduced-mean", args(uniform(0.1, 0.9, 4), uniform(0.0, 1.0, 4)),
           numdiff.nn.functional.binary_cross_entropy, lambda x, t: _bce(x, t).mean()),    OpCase("mse_loss_mean", "both-grads", args(normal(3, 4), normal(3, 4)), F.mse_loss, lambda x, t: ((x - t) ** 2).mean()),
    OpCase("mse_loss_mean", "3d", args(normal(2, 3, 2), normal(2, 3, 2)), F.mse_loss, lambda x, t: ((x - t) ** 2).mean()),
    OpCase("nll_loss", "mean", args(normal(4, 3), constant(_TARGET)), F.nll_loss, _nll),
    OpCase(
        "nll_loss", "weight-ignore-NCd-sum", args(normal(2, 3, 2), constant(_IGNORED), Const(_WEIGHT)),
        lambda x, t, w: F.nll_loss(x, t, w, reduction="sum"), lambda x, t, w: _nll(x, t, w, reduction="sum"),
    ),
    OpCase(
        "nll_loss", "none-1d", args(normal(3), constant(np.array(1))),
        lambda x, t: F.nll_loss(x, t, reduction="none"), lambda x, t: -x[t],
    ),
    OpCase("cross_entropy", "mean", args(normal(4, 3), constant(_TARGET)), F.cross_entropy, _cross_entropy),
    OpCase(
        "cross_entropy", "weight-smoothing-ignore-NCd", args(normal(2, 3, 2), constant(_IGNORED), Const(_WEIGHT)),
        lambda x, t, w: F.cross_entropy(x, t, w, label_smoothing=0.2),
        lambda x, t, w: _cross_entropy(x, t, w, smoothing=0.2),
    ),
    OpCase(
        "cross_entropy", "none-ignore-index-3", args(normal(4, 3), constant(np.array([0, 3, 2, 1]))),
        lambda x, t: F.cross_entropy(x, t, ignore_index=3, reduction="none", label_smoothing=0.1),
        lambda x, t: _cross_entropy(x, np.where(t == 3, -100, t), reduction="none", smoothing=0.1),
    ),
    OpCase(  # (N, C), no weights or smoothing: the one-pass kernel (numdiff.kernels.class_loss)
        "cross_entropy", "sum-ignore-index", args(normal(4, 3), constant(np.array([1, -100, 0, 2]))),
        lambda x, t: F.cross_entropy(x, t, reduction="sum"), lambda x, t: _cross_entropy(x, t, reduction="sum"),
    ),
    OpCase(
        "cross_entropy", "sum-1d", args(normal(3), constant(np.array(2))),
        lambda x, t: F.cross_entropy(x, t, reduction="sum"), lambda x, t: -_log_softmax(x[None])[0, t],
    ),
]  # fmt: skip
