"""Losses from likelihoods: binary_cross_entropy (from probabilities, or stably from logits),
kl_div, poisson_nll_loss and gaussian_nll_loss, with PyTorch's arguments and reductions."""

from __future__ import annotations

import math
import warnings

from numdiff.backend import holds_values, to_host
from numdiff.creation import full_like
from numdiff.nn._losses import _check_float, _reduce, _reduction
from numdiff.ops.activation import softplus
from numdiff.ops.elementwise import PUBLIC as RULES
from numdiff.ops.loss import BinaryCrossEntropy
from numdiff.ops.selection import where
from numdiff.tensor import Tensor


def _check_same_shape(op: str, input: Tensor, target: Tensor) -> None:
    _check_float(op, "input", input)
    _check_float(op, "target", target)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"{op}: target size {tuple(target.shape)} must be the same as input size {tuple(input.shape)}"
        )


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """-w (t log x + (1 - t) log(1 - x)) for probabilities x in [0, 1]; logs are clamped at -100."""
    reduction = _reduction("binary_cross_entropy", size_average, reduce, reduction)
    _check_same_shape("binary_cross_entropy", input, target)
    if holds_values(input._data):  # a meta input has no values to check
        values = to_host(input._data)
        if values.size and not ((values >= 0) & (values <= 1)).all():
            raise ValueError(
                "binary_cross_entropy: all elements of input should be between 0 and 1 (got values in "
                f"[{values.min()}, {values.max()}]); pass logits to binary_cross_entropy_with_logits instead"
            )
    loss = BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """binary_cross_entropy(sigmoid(input), target), computed stably from logits.

    `pos_weight` (broadcast along the last dimension, one per class) scales the positive term.
    """
    reduction = _reduction("binary_cross_entropy_with_logits", size_average, reduce, reduction)
    _check_same_shape("binary_cross_entropy_with_logits", input, target)
    if pos_weight is None:
        loss = RULES["bce_with_logits"](input, target)
    else:
        # softplus(-x) = -log(sigmoid(x)); an infinite threshold keeps it exact for every x.
        neg_log_sigmoid = softplus(-input, threshold=float("inf"))
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * neg_log_sigmoid
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Pointwise KL divergence ``target * (log(target) - input)`` of log-probabilities `input`
    (``exp(target) * (target - input)`` with `log_target`); 0 where target is 0.

    'batchmean' divides the sum by the batch size (input.shape[0]), which is the KL divergence
    of the batch's distributions; 'mean' divides by every element, as PyTorch still does.

    >>> kl_div(numdiff.log_softmax(logits, 1), probs, reduction="batchmean")
    """
    if size_average is not None or reduce is not None:
        reduction = _reduction("kl_div", size_average, reduce, "mean")
    elif reduction == "mean":
        warnings.warn(
            "kl_div: reduction 'mean' divides the total loss by both the batch size and the support size; "
            "'batchmean' divides only by the batch size and is the KL divergence (PyTorch keeps 'mean' "
            "as it is for now)",
            UserWarning,
            stacklevel=2,
        )
    elif reduction != "batchmean":
        reduction = _reduction("kl_div", None, None, reduction)
    _check_float("kl_div", "input", input)
    _check_float("kl_div", "target", target)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy is 0 at target == 0 (where log(target) is -inf), with PyTorch's gradient there.
        loss = target.xlogy(target) - target * input
    if reduction != "batchmean":
        return _reduce(loss, reduction)
    total = loss.sum()
    return total / input.shape[0] if input.ndim else total


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average: bool | None = None,
    eps: float = 1e-8,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood of `target` counts under Poisson(rate): with `log_input` the input
    is log(rate) and the loss ``exp(input) - target * input``, else ``input - target * log(input + eps)``.

    `full` adds Stirling's approximation of log(target!), ``t log t - t + 0.5 log(2 pi t)``, for
    targets above 1.

    >>> poisson_nll_loss(numdiff.tensor([0.1, 1.2]), numdiff.tensor([1.0, 3.0]))
    """
    reduction = _reduction("poisson_nll_loss", size_average, reduce, reduction)
    _check_float("poisson_nll_loss", "input", input)
    _check_float("poisson_nll_loss", "target", target)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        # The term is dropped for targets up to 1; computing it at 2 there keeps log(0) out of both passes.
        dropped = target <= 1
        counts = where(dropped, 2.0, target)
        stirling = counts * counts.log() - counts + (counts * (2 * math.pi)).log() * 0.5
        loss = loss + where(dropped, 0.0, stirling)
    return _reduce(loss, reduction)


def _gaussian_variance(input: Tensor, var: Tensor | float) -> Tensor:
    """`var` shaped to broadcast against `input`, PyTorch's way; raises on the shapes it refuses."""
    if isinstance(var, bool) or not isinstance(var, (float, Tensor)):
        raise TypeError(f"gaussian_nll_loss: var must be a Tensor or a float, got {type(var).__name__}")
    if isinstance(var, float):
        if var < 0:
            raise ValueError(f"gaussian_nll_loss: var has negative entry/entries (var={var})")
        return full_like(input, var)
    _check_float("gaussian_nll_loss", "var", var)
    if (to_host(var._data) < 0).any():
        raise ValueError("gaussian_nll_loss: var has negative entry/entries")
    input_shape, var_shape = tuple(input.shape), tuple(var.shape)
    if var_shape == input_shape:
        return var
    if var_shape == input_shape[:-1]:
        return var.unsqueeze(-1)  # one variance per row, shared by the last dimension
    # PyTorch also takes a var with one dimension of another size (meant to be 1, homoscedastic there).
    if len(var_shape) == len(input_shape) and sum(v for i, v in zip(input_shape, var_shape) if i != v) == 1:
        return var
    raise ValueError(
        f"gaussian_nll_loss: var is of incorrect size {var_shape} for input of size {input_shape}: "
        "expected the input's size, the input's size without its last dimension, or the input's size "
        "with one dimension of size 1"
    )


def gaussian_nll_loss(
    input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6, reduction: str = "mean"
) -> Tensor:
    """Negative log likelihood of `target` under N(input, var): ``0.5 (log v + (input - target)^2 / v)``
    with ``v = max(var, eps)``; `full` adds ``0.5 log(2 pi)``.

    As in PyTorch the clamp at `eps` is invisible to the gradient: var's gradient is taken at v
    and passed through unchanged.

    >>> gaussian_nll_loss(mean, target, var=numdiff.ones(4), full=True)
    """
    _check_float("gaussian_nll_loss", "input", input)
    _check_float("gaussian_nll_loss", "target", target)
    var = _gaussian_variance(input, var)
    reduction = _reduction("gaussian_nll_loss", None, None, reduction)
    # v's value with var's gradient: the clamp is applied to a constant and added on.
    detached = var.detach()
    var = var + (detached.clamp_min(eps) - detached)
    diff = input - target
    loss = (var.log() + diff * diff / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "gaussian_nll_loss", "kl_div", "poisson_nll_loss"]
