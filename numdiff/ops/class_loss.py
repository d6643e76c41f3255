"""nll_loss and cross_entropy over class-index targets, each one op with its own backward.

Composed from gather, where, log_softmax, sums and divisions, one cross-entropy step recorded
about twenty nodes; the tape overhead of those dominated the loss of a small classifier. Both
losses are linear in the log-probabilities with a constant coefficient array ``coeff`` of the
input's shape, which the forward builds once from the target, class weights, ignore_index,
label smoothing and the reduction's divisor:

    loss = sum over (entry i, class c) of coeff[i, c] * log_probs[i, c]     (per entry for 'none')

nll_loss: ``coeff[i, t_i] = -w[t_i] / D`` and 0 elsewhere. cross_entropy (log_probs =
log_softmax(x)): ``coeff[i, c] = -((1 - ls) * w[t_i] * [c == t_i] + ls / C * w[c]) / D``. Entries
whose target is ignore_index get 0; ``D`` is ``sum_i w[t_i]`` over kept entries for 'mean', else 1.

Backward: nll_loss's input gradient is ``coeff * grad``. cross_entropy's is
``(coeff - softmax(x) * sum_c coeff) * grad``; under create_graph the softmax is recomputed from x
with numdiff ops so the second derivative flows, otherwise the forward's value is used.
Class weights are constants here (the functional falls back to the composed form when a weight
requires grad). cross_entropy and nll_loss on (N, C) float32/float64 CPU inputs without class
weights (or smoothing), a classifier's usual loss, compute the same values in one compiled pass
(numdiff.kernels.class_loss).
"""

from __future__ import annotations

import numpy as np

from numdiff._lazy import lazy_module
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import backward_is_differentiated
from numdiff.backend import is_host
from numdiff.ops.activation import softmax
from numdiff.ops.registry import register

class_loss_kernels = lazy_module("numdiff.kernels.class_loss")

__all__ = ["CrossEntropy", "NllLoss"]


def _target_coefficients(target, weight, ignore_index, dtype):
    """Per entry: the safe class index (ignored entries point at class 0), and the weight of its
    target class (0 where ignored), both with the target's shape."""
    kept = target != ignore_index
    safe = np.where(kept, target, 0)
    # No classes (an empty weight): every target is ignore_index (others were refused), so no weight is read.
    picked_weight = np.ones(target.shape, dtype) if weight is None or not weight.size else weight.astype(dtype, copy=False)[safe]
    return safe, np.where(kept, picked_weight, dtype.type(0)).astype(dtype, copy=False)


def _one_hot_scaled(shape, class_dim, safe, values, dtype):
    """An array of `shape` that holds `values` at each entry's target class and 0 elsewhere."""
    out = np.zeros(shape, dtype)
    if shape[class_dim] == 0:  # no classes: every target is ignore_index, nothing to put
        return out
    np.put_along_axis(out, np.expand_dims(safe, class_dim), np.expand_dims(values, class_dim), axis=class_dim)
    return out


def _reduce(per_entry, coeff, entry_weight, reduction):
    """The loss for `reduction`, and coeff divided by the 'mean' divisor (left alone when every
    entry is ignored: the loss is then 0/0 = nan and the gradient 0, as in PyTorch)."""
    if reduction == "none":
        return per_entry, coeff
    total = per_entry.sum(dtype=per_entry.dtype)
    if reduction == "sum":
        return np.asarray(total), coeff
    divisor = entry_weight.sum(dtype=per_entry.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        loss = np.asarray(total / divisor)
    return loss, (coeff / divisor if divisor != 0 else coeff)


def _grad_like_input(grad, reduction, class_dim):
    return grad.unsqueeze(class_dim) if reduction == "none" else grad


@register("nll_loss", compile="call")
class NllLoss(Function):
    """Negative log likelihood of log-probabilities (N, C, ...) or (C,) at integer class targets
    (attrs: target array, weight array or None, ignore_index, reduction)."""

    @staticmethod
    def forward(ctx, log_probs, *, target, weight, ignore_index, reduction):
        if _rows_kernel_applies(log_probs, weight, ignore_index, 0.0):
            return _nll_loss_rows(ctx, log_probs, target, ignore_index, reduction)
        class_dim = 0 if log_probs.ndim == 1 else 1
        dtype = log_probs.dtype
        safe, entry_weight = _target_coefficients(target, weight, ignore_index, dtype)
        if log_probs.shape[class_dim]:
            picked = np.take_along_axis(log_probs, np.expand_dims(safe, class_dim), axis=class_dim).squeeze(class_dim)
        else:  # no classes: every target is ignore_index (others were refused), nothing is picked
            picked = np.zeros(safe.shape, dtype)
        per_entry = -entry_weight * picked
        coeff = _one_hot_scaled(log_probs.shape, class_dim, safe, -entry_weight, dtype)
        loss, coeff = _reduce(per_entry, coeff, entry_weight, reduction)
        ctx.save_for_backward(coeff)
        ctx.reduction, ctx.class_dim = reduction, class_dim
        return loss.astype(dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (coeff,) = ctx.saved_tensors
        return (coeff * _grad_like_input(grad, ctx.reduction, ctx.class_dim),)


@register("cross_entropy", compile="call")
class CrossEntropy(Function):
    """Cross entropy of logits (N, C, ...) or (C,) against integer class targets (attrs: target
    array, weight array or None, ignore_index, reduction, label_smoothing)."""

    @staticmethod
    def forward(ctx, x, *, target, weight, ignore_index, reduction, label_smoothing):
        if _rows_kernel_applies(x, weight, ignore_index, label_smoothing):
            return _cross_entropy_rows(ctx, x, target, ignore_index, reduction)
        class_dim = 0 if x.ndim == 1 else 1
        dtype = x.dtype
        classes = x.shape[class_dim]
        # Over zero classes there is no max (NumPy raises): every log-probability set is empty,
        # and the loss is PyTorch's (nan for a mean over no weight, 0 for a sum).
        shifted = x - (x.max(axis=class_dim, keepdims=True) if classes else 0)
        exp = np.exp(shifted)
        sum_exp = exp.sum(axis=class_dim, keepdims=True)
        log_probs = shifted - np.log(sum_exp)
        safe, entry_weight = _target_coefficients(target, weight, ignore_index, dtype)
        coeff = _one_hot_scaled(x.shape, class_dim, safe, -(1.0 - label_smoothing) * entry_weight, dtype)
        if label_smoothing and classes:
            class_weight = np.ones(classes, dtype) if weight is None else weight.astype(dtype, copy=False)
            shape = [1] * x.ndim
            shape[class_dim] = classes
            kept = np.expand_dims((target != ignore_index).astype(dtype), class_dim)
            coeff -= (label_smoothing / classes) * kept * class_weight.reshape(shape)
        per_entry = (coeff * log_probs).sum(axis=class_dim)
        if label_smoothing and not classes:  # PyTorch's smoothing term over zero classes: 0 / 0
            per_entry = np.full_like(per_entry, np.nan)
        loss, coeff = _reduce(per_entry, coeff, entry_weight, reduction)
        coeff_sum = coeff.sum(axis=class_dim, keepdims=True)
        probs = exp / sum_exp
        ctx.save_for_backward(x, coeff, coeff_sum, coeff - probs * coeff_sum)
        ctx.reduction, ctx.class_dim = reduction, class_dim
        return loss.astype(dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        x, coeff, coeff_sum, first_order = ctx.saved_tensors
        if backward_is_differentiated():  # create_graph: the softmax must stay a function of x
            first_order = coeff - softmax(x, ctx.class_dim) * coeff_sum
        return (first_order * _grad_like_input(grad, ctx.reduction, ctx.class_dim),)


_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)  # ints: iinfo.min is a property (0.1 us a read)


def _rows_kernel_applies(x, weight, ignore_index, label_smoothing):
    """(N, C) float32/float64 CPU logits (or log-probabilities), no class weights, no smoothing:
    numdiff.kernels.class_loss."""
    return (
        is_host(x) and x.ndim == 2 and x.dtype in _KERNEL_DTYPES and x.shape[1] > 0
        and weight is None and not label_smoothing and _INT64_MIN <= ignore_index <= _INT64_MAX
    )  # fmt: skip


def _rows_loss(per_entry, total, kept, reduction, dtype):
    """The rows kernels' loss for `reduction`: per entry, the float64 sum rounded once, or that sum
    over the kept count (0 / 0 = nan when every entry is ignored, as PyTorch)."""
    if reduction == "none":
        return per_entry
    if reduction == "sum":
        return np.asarray(total, dtype)
    return np.asarray(total / kept if kept else np.nan, dtype)  # no np.errstate: it costs more than the kernel


def _nll_loss_rows(ctx, log_probs, target, ignore_index, reduction):
    """NllLoss.forward through the one-pass kernel (same values as the general form)."""
    per_entry, total, kept, coeff = class_loss_kernels.nll_loss_rows(
        np.ascontiguousarray(log_probs), np.ascontiguousarray(target, dtype=np.int64), ignore_index, reduction == "mean"
    )
    ctx.save_for_backward(coeff)
    ctx.reduction, ctx.class_dim = reduction, 1
    return _rows_loss(per_entry, total, kept, reduction, log_probs.dtype)


def _cross_entropy_rows(ctx, x, target, ignore_index, reduction):
    """CrossEntropy.forward through the one-pass kernel (same values as the general form below)."""
    target = np.ascontiguousarray(target, dtype=np.int64)
    per_entry, total, kept, coeff, coeff_sum, first_order = class_loss_kernels.cross_entropy_rows(
        np.ascontiguousarray(x), target, ignore_index, reduction == "mean"
    )
    ctx.save_for_backward(x, coeff, coeff_sum, first_order)
    ctx.reduction, ctx.class_dim = reduction, 1
    return _rows_loss(per_entry, total, kept, reduction, x.dtype)
