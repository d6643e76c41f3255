"""Functional losses, composed from differentiable ops (no backward of their own).

Names, arguments and reductions are PyTorch's, including the legacy `size_average`/`reduce`.
"""

from __future__ import annotations

import warnings
from typing import Any

from numdiff.autograd.transform_state import anywhere, vmap_active
from numdiff.backend import holds_values, is_host, to_host
from numdiff.ops.activation import log_softmax
from numdiff.ops.class_loss import CrossEntropy, NllLoss
from numdiff.ops.elementwise import PUBLIC as RULES
from numdiff.ops.indexing import gather
from numdiff.ops.loss import MseLossMean
from numdiff.ops.reduction import Sum
from numdiff.ops.selection import where
from numdiff.tensor import Tensor

_REDUCTIONS = ("none", "mean", "sum")


class LossArgumentError(ValueError, RuntimeError):
    """A loss's arguments have shapes or values it cannot take. PyTorch raises RuntimeError for
    these, numdiff's losses ValueError; this is both, so code written for either catches it."""


def _reduction(op: str, size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        warnings.warn(
            f"{op}: size_average and reduce are deprecated, please use reduction='mean'|'sum'|'none'",
            DeprecationWarning,
            stacklevel=3,
        )
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if (size_average and reduce) else ("sum" if reduce else "none")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        data = loss._data
        if data.dtype.char in "fd":
            # mean's own ops (Sum over every dim, then / count: the same bits) without its export
            # wrapper and its dtype, dims and half-precision handling (3 us of a 20 us mse_loss).
            return Sum.apply(loss, dims=tuple(range(data.ndim)), keepdim=False) / data.size
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_float(op: str, name: str, t: Any) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: argument '{name}' must be a Tensor, not {type(t).__name__}")
    if t._data.dtype.char not in "fd" and not t.is_floating_point():  # float32/64 without a dtype lookup
        raise TypeError(f"{op}: expected '{name}' to be a floating point tensor, got dtype {t.dtype!r}")
    return t


def _check_class_weight(op: str, weight: Tensor | None, classes: int) -> None:
    if weight is None:
        return
    _check_float(op, "weight", weight)
    if tuple(weight.shape) != (classes,):
        raise ValueError(f"{op}: weight must be a 1-D tensor of {classes} elements (one per class), got shape {tuple(weight.shape)}")


_FEW_TARGETS = 32
"""Up to this many class-index targets are range-checked as a Python list (_check_class_target)."""


def _check_class_target(op: str, input: Tensor, target: Any, ignore_index: int) -> int:
    """Validate class-index targets; returns the class dimension."""
    if not isinstance(target, Tensor) or target._data.dtype.kind not in "iu":
        raise TypeError(f"{op}: target must be an integer Tensor of class indices, got {getattr(target, 'dtype', type(target).__name__)}")
    shape = input._data.shape  # a tuple: Tensor.shape builds a Size on every read
    if not shape:
        raise ValueError(f"{op}: input must have at least 1 dimension (C) or (N, C, ...), got a 0-d tensor")
    class_dim = 0 if len(shape) == 1 else 1
    expected = shape[:class_dim] + shape[class_dim + 1 :]
    if target._data.shape != expected:
        raise ValueError(
            f"{op}: expected target of shape {expected} for input of shape {shape} "
            f"(input (N, C, d1, ...) takes target (N, d1, ...)), got target of shape {target._data.shape}"
        )
    classes = shape[class_dim]
    if not holds_values(target._data):
        return class_dim  # a meta target has no values to check
    values = to_host(target._data)
    if values.size <= _FEW_TARGETS:
        # A batch of one or a few (per-sample loops, RL, a tutorial's RNN): Python's min and max of
        # a list cost a sixth of two NumPy reductions' call overhead (0.9 against 5.8 us for one target,
        # 3.8 against 6.6 for 32; loaded machine, 2026-12-06).
        listed = values.ravel().tolist()
        if not listed or (min(listed) >= 0 and max(listed) < classes):
            return class_dim
    elif values.min() >= 0 and values.max() < classes:
        return class_dim  # the usual case, in two reductions instead of five array passes
    bad = (values != ignore_index) & ((values < 0) | (values >= classes))
    if bad.any():
        raise IndexError(
            f"{op}: target {int(values[bad][0])} is out of bounds: class indices must be in [0, {classes - 1}] "
            f"(or equal ignore_index={ignore_index})"
        )
    return class_dim


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood of log-probabilities `input` (N, C, ...) at class indices `target` (N, ...).

    The mean is weighted: sum(w[t] * loss) / sum(w[t]) over entries whose target is not ignore_index.

    >>> nll_loss(numdiff.log_softmax(logits, 1), labels)
    """
    reduction = _reduction("nll_loss", size_average, reduce, reduction)
    _check_float("nll_loss", "input", input)
    class_dim = _check_class_target("nll_loss", input, target, ignore_index)
    _check_class_weight("nll_loss", weight, input._data.shape[class_dim])
    if _one_op(input, target, weight):
        return NllLoss.apply(
            input, target=target._data, weight=None if weight is None else weight._data,
            ignore_index=ignore_index, reduction=reduction,
        )  # fmt: skip
    ignored = target == ignore_index
    safe_target = where(ignored, 0, target)
    picked = gather(input, class_dim, safe_target.unsqueeze(class_dim)).squeeze(class_dim)
    kept = (~ignored).to(input.dtype)
    per_entry = kept if weight is None else _class_weights(weight, safe_target) * kept
    loss = where(ignored, 0.0, -picked * per_entry)
    if reduction == "mean":
        return loss.sum() / per_entry.sum()
    return loss.sum() if reduction == "sum" else loss


def _one_op(input: Tensor, target: Tensor, weight: Tensor | None) -> bool:
    """Whether the one-op nll_loss / cross_entropy (numdiff.ops.class_loss) applies: class-index
    targets on the CPU and class weights that need no gradient, outside vmap (whose batching
    rules cover the composed form's ops); else the composed form runs."""
    return (
        not vmap_active()
        and isinstance(target, Tensor)
        and is_host(input._data)
        and is_host(target._data)
        and target._data.dtype.kind in "iu"
        and (weight is None or (is_host(weight._data) and not weight.requires_grad))
    )


def _class_weights(weight: Tensor, target: Tensor) -> Tensor:
    """weight[target] for a target of any shape (0-d included), with target's shape."""
    return weight[target.reshape(-1)].reshape(tuple(target.shape))


def _class_shape(input: Tensor, class_dim: int) -> tuple[int, ...]:
    return tuple(n if d == class_dim else 1 for d, n in enumerate(input.shape))


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy of logits `input` (N, C, ...) against class indices or class probabilities.

    With class indices it is nll_loss(log_softmax(input, 1), target); `label_smoothing` mixes in the
    uniform distribution over the C classes, as PyTorch.

    >>> cross_entropy(numdiff.randn(4, 3), numdiff.tensor([0, 2, 1, 0]), label_smoothing=0.1)
    """
    reduction = _reduction("cross_entropy", size_average, reduce, reduction)
    _check_float("cross_entropy", "input", input)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    shape = input._data.shape  # a tuple: Tensor.shape builds a Size on every read
    if not shape:
        raise ValueError("cross_entropy: input must have at least 1 dimension (C) or (N, C, ...), got a 0-d tensor")
    class_dim = 0 if len(shape) == 1 else 1
    classes = shape[class_dim]
    _check_class_weight("cross_entropy", weight, classes)
    if _one_op(input, target, weight):
        _check_class_target("cross_entropy", input, target, ignore_index)
        return CrossEntropy.apply(
            input, target=target._data, weight=None if weight is None else weight._data,
            ignore_index=ignore_index, reduction=reduction, label_smoothing=label_smoothing,
        )  # fmt: skip
    log_probs = log_softmax(input, class_dim)
    class_weight = None if weight is None else weight.reshape(_class_shape(input, class_dim))
    if isinstance(target, Tensor) and target.is_floating_point():
        return _cross_entropy_soft(input, target, log_probs, class_weight, class_dim, reduction, label_smoothing)
    nll = nll_loss(log_probs, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0.0:
        return nll
    ignored = target == ignore_index
    weighted = log_probs if class_weight is None else log_probs * class_weight
    smooth = where(ignored, 0.0, -weighted.sum(class_dim))
    if reduction == "mean":
        safe_target = where(ignored, 0, target)
        kept = (~ignored).to(input.dtype)
        denominator = kept.sum() if weight is None else (_class_weights(weight, safe_target) * kept).sum()
        smooth = smooth.sum() / denominator
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / classes)


def _cross_entropy_soft(input, target, log_probs, class_weight, class_dim, reduction, label_smoothing):
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"cross_entropy: class-probability target must have the input's shape {tuple(input.shape)}, "
            f"got {tuple(target.shape)}"
        )
    classes = input.shape[class_dim]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    products = log_probs * target
    if class_weight is not None:
        products = products * class_weight
    if reduction == "none":
        return -products.sum(class_dim)
    total = -products.sum()
    if reduction == "sum":
        return total
    return total / (input.numel() // classes) if input.numel() else total * float("nan")


def _pointwise_pair(op: str, input: Tensor, target: Tensor) -> Tensor:
    """The target, checked; an integer or bool target joins the float input's dtype, as PyTorch's
    type promotion does (``mse_loss(output, torch.arange(1, 11))`` in the 60-minute blitz)."""
    if not (isinstance(input, Tensor) and isinstance(target, Tensor) and input._data.dtype.char in "fd"
            and target._data.dtype.char in "fd"):  # the common case needs none of the checks below
        _check_float(op, "input", input)
        if isinstance(target, Tensor) and target._data.dtype.kind in "iub":
            target = target.to(input.dtype)
        _check_float(op, "target", target)
    if target._data.shape != input._data.shape:
        warnings.warn(
            f"{op}: using a target size {tuple(target.shape)} that is different to the input size "
            f"{tuple(input.shape)}. This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            UserWarning,
            stacklevel=3,
        )
    return target


def _weighted(op: str, loss: Tensor, input: Tensor, weight: Tensor | None, reduction: str) -> Tensor:
    if weight is None:
        return _reduce(loss, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError(f"{op}: weight must have the input's shape {tuple(input.shape)}, got {tuple(weight.shape)}")
    loss = loss * weight
    return loss.sum() / weight.sum() if reduction == "mean" else _reduce(loss, reduction)


def _one_mse_op(x: Any, t: Any) -> bool:
    """Whether mse_loss's mean is the one op MseLossMean: same-shape, same-dtype float32/float64
    host arrays with elements, outside transforms and compile traces (anywhere.levels): there the
    composed form's ops run, which vmap batches and compile fuses (as one op, compile called it, and
    lstm_cell_loop's compiled step measured 0.67 -> 0.76 of torch's)."""
    return (
        not anywhere.levels and x.shape == t.shape and x.dtype is t.dtype and x.dtype.char in "fd"
        and x.size > 0 and is_host(x) and is_host(t)
    )  # fmt: skip


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Squared error (input - target)^2, reduced; a weighted mean divides by sum(weight)."""
    reduction = _reduction("mse_loss", size_average, reduce, reduction)
    target = _pointwise_pair("mse_loss", input, target)
    if reduction == "mean" and weight is None and _one_mse_op(input._data, target._data):
        return MseLossMean.apply(input, target)
    return _weighted("mse_loss", RULES["squared_error"](input, target), input, weight, reduction)


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Absolute error |input - target|, reduced; a weighted mean divides by sum(weight)."""
    reduction = _reduction("l1_loss", size_average, reduce, reduction)
    target = _pointwise_pair("l1_loss", input, target)
    return _weighted("l1_loss", (input - target).abs(), input, weight, reduction)


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (plain L1 when beta is 0)."""
    reduction = _reduction("smooth_l1_loss", size_average, reduce, reduction)
    target = _pointwise_pair("smooth_l1_loss", input, target)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    if beta == 0:  # plain L1: the rule's derivatives divide by beta
        return _reduce((input - target).abs(), reduction)
    return _reduce(RULES["smooth_l1"](input, target, beta=beta), reduction)


def huber_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0, weight: Tensor | None = None
) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta): smooth_l1_loss scaled by delta.

    A `weight` (the input's shape) multiplies each element before the reduction; its mean is a plain mean.

    >>> huber_loss(numdiff.tensor([0.5, 3.0]), numdiff.zeros(2), delta=2.0)
    tensor(2.0625)
    """
    reduction = _reduction("huber_loss", None, None, reduction)
    target = _pointwise_pair("huber_loss", input, target)
    if not delta > 0:
        raise LossArgumentError(f"huber_loss: delta must be positive, got {delta}")
    loss = RULES["huber"](input, target, delta=delta)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError(f"huber_loss: weight must have the input's shape {tuple(input.shape)}, got {tuple(weight.shape)}")
        loss = loss * weight
    return _reduce(loss, reduction)


__all__ = ["cross_entropy", "huber_loss", "l1_loss", "mse_loss", "nll_loss", "smooth_l1_loss"]
