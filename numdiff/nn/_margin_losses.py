"""Margin and embedding losses (margin_ranking, hinge_embedding, cosine_embedding, triplet_margin,
soft_margin, multilabel_soft_margin) and pairwise_distance, composed from differentiable ops with
PyTorch's arguments, shape rules and reductions."""

from __future__ import annotations

from numdiff._dtype import bool_ as numdiff_bool
from numdiff.linalg import vector_norm
from numdiff.nn._functional_layers import one_hot
from numdiff.nn._losses import LossArgumentError, _check_float, _reduce, _reduction
from numdiff.ops.activation import logsigmoid
from numdiff.ops.elementwise import PUBLIC as RULES
from numdiff.ops.selection import minimum, where
from numdiff.tensor import Tensor


def _target_in_input_dtype(op: str, target: Tensor, input: Tensor) -> Tensor:
    """The target in the input's dtype: PyTorch takes integer and bool targets for the margin
    losses (``torch.tensor([1, -1])``, a label tensor), which only compare or scale by them."""
    if not isinstance(target, Tensor):
        raise TypeError(f"{op}: argument 'target' must be a Tensor, not {type(target).__name__}")
    return target if target.is_floating_point() else target.to(input.dtype)


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: target 1 asks input1 to rank above input2
    by `margin`, target -1 the reverse.

    >>> margin_ranking_loss(numdiff.tensor([0.2, 0.9]), numdiff.tensor([0.5, 0.1]), numdiff.tensor([1.0, -1.0]))
    """
    reduction = _reduction("margin_ranking_loss", size_average, reduce, reduction)
    for name, t in (("input1", input1), ("input2", input2)):
        _check_float("margin_ranking_loss", name, t)
    target = _target_in_input_dtype("margin_ranking_loss", target, input1)
    if not input1.ndim == input2.ndim == target.ndim:
        raise LossArgumentError(
            "margin_ranking_loss: all input tensors should have the same number of dimensions, but got "
            f"input1 {tuple(input1.shape)}, input2 {tuple(input2.shape)}, target {tuple(target.shape)}"
        )
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """`input` (a distance) where target is 1, ``max(0, margin - input)`` where target is -1.

    As in PyTorch, a target that is neither 1 nor -1 takes both terms.

    >>> hinge_embedding_loss(numdiff.tensor([0.3, 2.0]), numdiff.tensor([1.0, -1.0]))
    """
    reduction = _reduction("hinge_embedding_loss", size_average, reduce, reduction)
    _check_float("hinge_embedding_loss", "input", input)
    target = _target_in_input_dtype("hinge_embedding_loss", target, input)
    below_margin = where(target != 1, (margin - input).clamp_min(0), 0.0)
    distance = where(target != -1, input, 0.0)
    return _reduce(below_margin + distance, reduction)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``1 - cos(input1, input2)`` where target is 1, ``max(0, cos - margin)`` where target is -1,
    for rows of (N, D) inputs against a (N,) target, or (D,) inputs against a 0-d target.

    The cosine is ``x.y / sqrt((|x|^2 + 1e-12) (|y|^2 + 1e-12))``, as in PyTorch.

    >>> cosine_embedding_loss(numdiff.randn(3, 5), numdiff.randn(3, 5), numdiff.tensor([1.0, -1.0, 1.0]))
    """
    op = "cosine_embedding_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    for name, t in (("input1", input1), ("input2", input2)):
        _check_float(op, name, t)
    target = _target_in_input_dtype(op, target, input1)
    if target.ndim > 1:
        raise LossArgumentError(f"{op}: expected a 0-d or 1-d target (multi-target not supported), got shape {tuple(target.shape)}")
    if not input1.ndim == input2.ndim == target.ndim + 1:
        raise LossArgumentError(
            f"{op}: a {target.ndim}-d target expects {target.ndim + 1}-d inputs, but found inputs with shapes "
            f"{tuple(input1.shape)} and {tuple(input2.shape)}"
        )
    dim = target.ndim
    tiny = 1e-12
    dot = (input1 * input2).sum(dim)
    squares = ((input1 * input1).sum(dim) + tiny) * ((input2 * input2).sum(dim) + tiny)
    cos = dot / squares.sqrt()
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduce(loss, reduction)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The p-norm of ``x1 - x2 + eps`` over the last dimension (after broadcasting).

    >>> pairwise_distance(numdiff.zeros(2, 3), numdiff.ones(2, 3))
    tensor([1.7321, 1.7321])
    """
    _check_float("pairwise_distance", "x1", x1)
    _check_float("pairwise_distance", "x2", x2)
    if not p >= 0:
        raise ValueError(f"pairwise_distance: p must be non-negative, got {p}")
    difference = x1 - x2 + eps
    if difference.ndim == 0:
        return difference.abs() if p != 0 else (difference != 0).to(difference.dtype)
    return vector_norm(difference, p, -1, keepdim=keepdim)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with d = pairwise_distance(p, eps);
    `swap` takes the smaller of d(anchor, negative) and d(positive, negative).

    >>> triplet_margin_loss(numdiff.randn(8, 16), numdiff.randn(8, 16), numdiff.randn(8, 16), swap=True)
    """
    op = "triplet_margin_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    if not margin > 0:
        raise ValueError(f"{op}: margin must be greater than 0, got {margin}")
    for name, t in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        _check_float(op, name, t)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise LossArgumentError(
            f"{op}: the anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got anchor {tuple(anchor.shape)}, positive {tuple(positive.shape)} and "
            f"negative {tuple(negative.shape)}"
        )
    to_positive = pairwise_distance(anchor, positive, p, eps)
    to_negative = pairwise_distance(anchor, negative, p, eps)
    if swap:
        to_negative = minimum(to_negative, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + to_positive - to_negative).clamp_min(0), reduction)


def soft_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-target * input))`` for targets of 1 and -1, computed
    as softplus so large margins neither overflow nor lose their gradient.

    >>> soft_margin_loss(numdiff.tensor([2.0, -0.5]), numdiff.tensor([1.0, -1.0]))
    """
    reduction = _reduction("soft_margin_loss", size_average, reduce, reduction)
    _check_float("soft_margin_loss", "input", input)
    target = _target_in_input_dtype("soft_margin_loss", target, input)
    return _reduce(RULES["soft_margin"](input, target), reduction)


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross entropy of logits per class, averaged over the classes (the last dimension):
    ``-mean_c(w_c (y_c log sigmoid(x_c) + (1 - y_c) log sigmoid(-x_c)))``, then reduced over samples.

    >>> multilabel_soft_margin_loss(numdiff.randn(4, 3), numdiff.tensor([[1.0, 0, 1]] * 4))
    """
    op = "multilabel_soft_margin_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    _check_float(op, "input", input)
    target = _target_in_input_dtype(op, target, input)
    if input.ndim == 0:
        raise ValueError(f"{op}: input must have a class dimension (C) or (N, C), got a 0-d tensor")
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        _check_float(op, "weight", weight)
        loss = loss * weight
    classes = input.shape[-1]
    return _reduce(loss.sum(input.ndim - 1) / classes, reduction)


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-class hinge loss of scores (N, C) or (C,) against class indices (N,) or ():
    ``sum over i != y of w_y * max(0, margin - x_y + x_i)**p / C``, p 1 or 2.

    >>> multi_margin_loss(numdiff.tensor([[0.1, 0.2, 0.4, 0.8]]), numdiff.tensor([3]))
    tensor(0.3250)
    """
    op = "multi_margin_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    _check_float(op, "input", input)
    if p not in (1, 2):
        raise ValueError(f"{op}: only p == 1 and p == 2 are supported, got p={p!r}")
    if input.ndim not in (1, 2) or input.shape[-1] == 0:
        raise ValueError(f"{op}: expected input of shape (N, C) or (C,) with C > 0, got {tuple(input.shape)}")
    rows = input if input.ndim == 2 else input.reshape(1, -1)
    samples, classes = rows.shape
    if not isinstance(target, Tensor) or target.dtype.is_floating_point or target.dtype == numdiff_bool:
        raise TypeError(f"{op}: target must be a tensor of class indices (an integer dtype), got {_describe(target)}")
    if target.ndim > 1 or target.numel() != samples:
        raise ValueError(
            f"{op}: target {tuple(target.shape)} must hold one class index per row of input {tuple(input.shape)}"
        )
    labels = target.reshape(samples).long()
    if samples and (int(labels.min()) < 0 or int(labels.max()) >= classes):
        raise ValueError(f"{op}: target out of range: indices must lie in [0, {classes}), got {labels.tolist()}")
    hinge = (margin - rows.gather(1, labels.reshape(samples, 1)) + rows).clamp_min(0)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        _check_float(op, "weight", weight)
        if tuple(weight.shape) != (classes,):
            raise ValueError(f"{op}: weight must have shape ({classes},), got {tuple(weight.shape)}")
        hinge = hinge * weight[labels].reshape(samples, 1)
    others = 1 - one_hot(labels, classes).to(hinge.dtype)  # the target's own term is left out
    loss = (hinge * others).sum(1) / classes
    return _reduce(loss if input.ndim == 2 else loss.reshape(()), reduction)


def _describe(value: object) -> str:
    return f"dtype {value.dtype!r}" if isinstance(value, Tensor) else type(value).__name__


__all__ = [
    "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "multi_margin_loss",
    "multilabel_soft_margin_loss", "pairwise_distance", "soft_margin_loss", "triplet_margin_loss",
]
