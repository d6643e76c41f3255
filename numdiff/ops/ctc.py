"""ctc_loss: the connectionist temporal classification loss of each batch item, one op.

The forward runs the alpha recursion and, when log_probs needs a gradient, the beta recursion in
the same compiled pass (numdiff.kernels.ctc), keeping the gradient for an upstream gradient of 1
(the "unit gradient", (T, N, C)); the backward scales it by each item's upstream gradient. That
gradient is PyTorch's: exp(log_probs) minus each class's path occupancy over exp(log_probs), the
gradient with respect to the logits when log_probs = log_softmax(logits) (for normalised inputs
log_softmax's backward passes it through unchanged), returned as log_probs.grad for any input.
Like PyTorch's, it is not differentiable again: under create_graph the gradient hangs from
log_probs through a node whose backward raises (once_differentiable's), so a second derivative
raises instead of treating the unit gradient as a constant.

Arrays on a CUDA device are computed on the host and copied back (no CUDA kernel: numdiff's other
loss kernels have none either). numdiff.compile replays this forward and runs this backward
eagerly (the eager_backward rule); under vmap the op runs item by item (tests/ops/test_specs.py
lists it among the looped ops).
"""

from __future__ import annotations

import numpy as np

from numdiff._lazy import lazy_module
from numdiff.autograd._function_contract import delayed_error
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import backward_is_differentiated, no_grad
from numdiff.backend import holds_values, like_host, to_host
from numdiff.ops.registry import register
from numdiff.tensor import Tensor

ctc_kernels = lazy_module("numdiff.kernels.ctc")

__all__ = ["CtcArgumentError", "CtcLoss", "kernel_arguments"]


class CtcArgumentError(ValueError, RuntimeError):
    """ctc_loss's lengths or targets do not fit log_probs. PyTorch raises RuntimeError for these,
    numdiff's losses ValueError; this is both (as numdiff.nn's LossArgumentError)."""


def _lengths(name: str, value, items: int) -> np.ndarray:
    """`value` (an integer array) as (items,) int64, refusing floats and a count other than one per item."""
    array = to_host(value)
    if array.dtype.kind not in "iu":
        raise TypeError(
            f"ctc_loss: {name} must be integral (a Tensor, list or tuple of ints), got dtype {array.dtype}"
        )
    array = array.reshape(-1).astype(np.int64, copy=False)
    if array.shape[0] != items:
        raise CtcArgumentError(
            f"ctc_loss: {name} must have one entry per batch item ({items}), got {array.shape[0]}: {array.tolist()[:8]}"
        )
    return array


def _check_range(name: str, lengths: np.ndarray, high: int, what: str) -> None:
    bad = np.flatnonzero((lengths < 0) | (lengths > high))
    if bad.size:
        i = int(bad[0])
        raise CtcArgumentError(f"ctc_loss: {name}[{i}] = {int(lengths[i])} is outside [0, {high}] ({what})")


def _padded_targets(targets, target_lengths: np.ndarray, items: int) -> np.ndarray:
    """Targets as (N, max(target_lengths)) int64, from padded (N, S) or concatenated (sum,) form."""
    values = to_host(targets)
    if values.dtype.kind == "f":  # PyTorch casts float targets; a fraction would be silently cut
        if not np.array_equal(values, np.trunc(values)):
            raise TypeError(
                "ctc_loss: float targets must hold whole numbers (class indices); pass an integer Tensor"
            )
    elif values.dtype.kind not in "iu":
        raise TypeError(
            f"ctc_loss: targets must be an integer Tensor of class indices, got dtype {values.dtype}"
        )
    values = values.astype(np.int64, copy=False)
    longest = int(target_lengths.max(initial=0))
    if values.ndim == 2:
        if values.shape[0] != items:
            raise CtcArgumentError(
                f"ctc_loss: padded targets must have {items} rows (one per batch item), got shape {values.shape}"
            )
        _check_range(
            "target_lengths", target_lengths, values.shape[1], f"a padded target row holds {values.shape[1]}"
        )
        return np.ascontiguousarray(values[:, :longest])
    if values.ndim != 1:
        raise CtcArgumentError(
            f"ctc_loss: targets must be 1-D (concatenated) or 2-D (padded), got shape {values.shape}"
        )
    _check_range("target_lengths", target_lengths, values.shape[0], "targets are concatenated")
    total = int(target_lengths.sum())
    if values.shape[0] != total:
        raise CtcArgumentError(
            f"ctc_loss: concatenated targets must have sum(target_lengths) = {total} entries, got {values.shape[0]}"
        )
    padded = np.zeros((items, longest), np.int64)
    padded[np.arange(longest) < target_lengths[:, None]] = values
    return padded


def _check_target_values(targets: np.ndarray, target_lengths: np.ndarray, classes: int, blank: int) -> None:
    """Every target value within its item's length is a class in [0, C) other than blank."""
    within = np.arange(targets.shape[1]) < target_lengths[:, None]
    bad = within & ((targets < 0) | (targets >= classes) | (targets == blank))
    if bad.any():
        n, k = (int(i) for i in np.argwhere(bad)[0])
        raise CtcArgumentError(
            f"ctc_loss: targets[{n}][{k}] = {int(targets[n, k])} is not a label: target values must be "
            f"classes in [0, {classes - 1}] other than blank={blank}"
        )


def kernel_arguments(shape: tuple, targets, input_lengths, target_lengths, blank: int) -> tuple:
    """(targets (N, S) int64 padded, input_lengths, target_lengths (N,) int64) for log_probs of
    `shape` (T, N, C), checked: one length per item, input lengths in [0, T], target lengths in
    [0, S] (padded) or summing to the targets' count (concatenated), target values labels."""
    steps, items, classes = shape
    if not 0 <= blank < classes:
        raise CtcArgumentError(f"ctc_loss: blank must be in label range [0, {classes - 1}], got {blank}")
    input_array = _lengths("input_lengths", input_lengths, items)
    target_array = _lengths("target_lengths", target_lengths, items)
    _check_range("input_lengths", input_array, steps, f"log_probs has T = {steps} steps")
    padded = _padded_targets(targets, target_array, items)
    _check_target_values(padded, target_array, classes, blank)
    return padded, input_array, target_array


def _run(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity, want_grad):
    """(nll (N,), unit gradient (T, N, C) or None, target lengths (N,) int64), host arrays."""
    padded, input_array, target_array = kernel_arguments(
        log_probs.shape, targets, input_lengths, target_lengths, blank
    )
    nll, unit = ctc_kernels.ctc_loss(
        to_host(log_probs), padded, input_array, target_array, blank, zero_infinity, want_grad
    )
    return nll, unit, target_array


def _mean_weights(target_lengths: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Each item's share of the 'mean' reduction, 1 / max(target length, 1), in `dtype`."""
    return (1 / np.maximum(target_lengths, 1)).astype(dtype)


def _reduce(nll: np.ndarray, target_lengths: np.ndarray, reduction: str) -> np.ndarray:
    """PyTorch's reductions: 'mean' is the mean over items of each loss over its target length."""
    if reduction == "none":
        return nll
    if reduction == "sum":
        return np.asarray(nll.sum(dtype=nll.dtype))
    divided = nll / np.maximum(target_lengths, 1).astype(nll.dtype)
    return np.asarray(divided.mean(dtype=nll.dtype))


@register("ctc_loss", compile="eager_backward")
class CtcLoss(Function):
    """CTC negative log-likelihood of log-probabilities (T, N, C), per item (N,) or reduced to a
    scalar (attrs: the targets, padded (N, S) or concatenated, and the input and target lengths,
    integer arrays as the caller's tensors hold them, so that numdiff.compile reads them as values
    of the program and not as constants; blank; zero_infinity; reduction 'none', 'sum' or
    'mean'). The forward checks them (`kernel_arguments`) before the kernel runs, also when a
    compiled program replays it. The reduction is folded in because composing PyTorch's
    ``(loss / target_lengths.clamp(min=1)).mean()`` from five ops cost 60 us a call, 15% of a
    (50, 16, 28) loss and backward.

    A recorded call computes the unit gradient with the loss, in one pass, and saves it (and
    log_probs, which a second derivative hangs from). A call whose ctx does not say log_probs
    needs a gradient (numdiff.compile replays forwards so) saves log_probs only, and the backward
    recomputes the unit gradient from it: the compile rule is eager_backward, since a traced
    backward would bake that recomputed array into the program."""

    @staticmethod
    def forward(ctx, log_probs, *, targets, input_lengths, target_lengths, blank, zero_infinity, reduction):
        if not holds_values(log_probs):  # meta: shapes only
            return like_host(
                np.zeros(log_probs.shape[1:2] if reduction == "none" else (), log_probs.dtype), log_probs
            )
        want_grad = ctx.needs_input_grad[:1] == (True,)
        nll, unit, lengths = _run(
            log_probs, targets, input_lengths, target_lengths, blank, zero_infinity, want_grad
        )
        ctx.save_for_backward(*((like_host(unit, log_probs), log_probs) if want_grad else (log_probs,)))
        ctx.attrs = (targets, input_lengths, target_lengths, blank, zero_infinity)
        ctx.reduction = reduction
        ctx.weights = _mean_weights(lengths, nll.dtype) if reduction == "mean" else None
        loss = _reduce(nll, lengths, reduction)
        return like_host(loss.reshape(-1), log_probs).reshape(
            loss.shape
        )  # a device copy of a 0-d array is (1,)

    @staticmethod
    def backward(ctx, grad):
        saved = ctx.saved_tensors
        log_probs = saved[-1]
        if len(saved) == 2:
            unit = saved[0]
        else:
            host = _run(log_probs._data, *ctx.attrs, want_grad=True)[1]
            unit = Tensor._wrap(like_host(host, log_probs._data), None, None)
        with no_grad():
            if ctx.reduction == "none":
                result = unit * grad.reshape(1, -1, 1)
            elif ctx.reduction == "sum":
                result = unit * grad
            else:  # PyTorch's mean backward, then its division's: grad / N / max(length, 1)
                weights = Tensor._wrap(like_host(ctx.weights, grad._data), None, None)
                result = unit * ((grad / ctx.weights.shape[0]) * weights).reshape(1, -1, 1)
        # PyTorch has no second derivative either: differentiating this gradient raises.
        if backward_is_differentiated():
            anchors = [log_probs] + ([grad] if grad.requires_grad else [])
            result = delayed_error(
                result, anchors, "ctc_loss's backward",
                "ctc_loss has no second derivative (nor forward-mode derivative), as in PyTorch",
            )
        return (result,)
