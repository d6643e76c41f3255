"""The top-level spellings of nn.functional calls (``torch.conv2d``, ``torch.dropout``,
``torch.layer_norm``, ...). Most take F's arguments; the rest keep PyTorch's own top-level
signatures, which differ: ``torch.dropout(input, p, train)``, ``torch.embedding(weight, indices)``,
``torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
cudnn_enabled)``, and losses whose `reduction` is an int (0 none, 1 mean, 2 sum).

`FUNCTIONS` joins numdiff's namespace (numdiff/__init__.py).
"""

from __future__ import annotations

from typing import Any

from numdiff.nn import functional as F  # noqa: N812 - PyTorch's usual spelling
from numdiff.tensor import Tensor

_SAME = (
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "avg_pool1d",
    "adaptive_avg_pool1d",
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "cosine_similarity", "pairwise_distance", "pdist",
    "bilinear", "celu", "selu", "hardshrink", "prelu", "celu_", "selu_", "rrelu_",
)  # fmt: skip
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(op: str, value: Any) -> str:
    if value in _REDUCTIONS:
        return _REDUCTIONS[value]
    if value in _REDUCTIONS.values():
        return value
    raise ValueError(f"{op}: reduction must be 0 (none), 1 (mean) or 2 (sum), got {value!r}")


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.dropout(input, p, train)``: F.dropout(input, p, training=train)."""
    return F.dropout(input, p, training=train)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.alpha_dropout(input, p, train)``."""
    return F.alpha_dropout(input, p, training=train)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.feature_alpha_dropout(input, p, train)``."""
    return F.feature_alpha_dropout(input, p, training=train)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.feature_dropout(input, p, train)``: whole channels (dimension 1) zeroed."""
    return F.dropout2d(input, p, training=train) if input.ndim == 4 else F.dropout1d(input, p, training=train)


def _dropout_inplace(name: str, function: Any) -> Any:
    def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
        return function(input, p, train, inplace=True)

    dropout_.__name__ = dropout_.__qualname__ = f"{name}_"
    dropout_.__doc__ = f"``torch.{name}_(input, p, train)``: in-place {name}."
    return dropout_


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5, cudnn_enable: bool = True) -> Tensor:
    """``torch.layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)``."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5, cudnn_enabled: bool = True) -> Tensor:
    """``torch.group_norm(input, num_groups, weight, bias, eps, cudnn_enabled)``."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None, running_var: Tensor | None,
               training: bool, momentum: float, eps: float, cudnn_enabled: bool = True) -> Tensor:  # fmt: skip
    """``torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)``."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None, running_var: Tensor | None,
                  use_input_stats: bool, momentum: float, eps: float, cudnn_enabled: bool = True) -> Tensor:  # fmt: skip
    """``torch.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled)``."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def rms_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """``torch.rms_norm(input, normalized_shape, weight, eps)``."""
    return F.rms_norm(input, normalized_shape, weight, eps)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``torch.embedding(weight, indices, ...)``: the rows of `weight` at `indices` (weight first)."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """``torch.threshold(input, threshold, value)``."""
    return F.threshold(input, threshold, value)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, generator: Any = None) -> Tensor:
    """``torch.rrelu(input, lower, upper, training)``."""
    return F.rrelu(input, lower, upper, training)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    """``torch.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)``."""
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    """``torch.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)``."""
    return F.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    """``torch.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)``."""
    return F.max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """``torch.max_pool1d_with_indices``: the values and the maxima's positions."""
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:
    """``torch.adaptive_max_pool1d(input, output_size)``: the values and the maxima's positions."""
    return F.adaptive_max_pool1d(input, output_size, True)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None, pos_weight: Tensor | None = None, reduction: Any = 1) -> Tensor:
    """``torch.binary_cross_entropy_with_logits(..., reduction)`` with reduction 0, 1 or 2."""
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction("binary_cross_entropy_with_logits", reduction), pos_weight=pos_weight)


def kl_div(input: Tensor, target: Tensor, reduction: Any = 1, *, log_target: bool = False) -> Tensor:
    """``torch.kl_div(input, target, reduction, log_target=...)`` with reduction 0, 1 or 2."""
    return F.kl_div(input, target, reduction=_reduction("kl_div", reduction), log_target=log_target)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: Any = 1) -> Tensor:
    """``torch.cosine_embedding_loss(input1, input2, target, margin, reduction)``."""
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction("cosine_embedding_loss", reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: Any = 1) -> Tensor:
    """``torch.hinge_embedding_loss(input, target, margin, reduction)``."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: Any = 1) -> Tensor:
    """``torch.margin_ranking_loss(input1, input2, target, margin, reduction)``."""
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction("margin_ranking_loss", reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2, eps: float = 1e-6, swap: bool = False, reduction: Any = 1) -> Tensor:
    """``torch.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)``."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction("triplet_margin_loss", reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float, reduction: Any) -> Tensor:
    """``torch.poisson_nll_loss(input, target, log_input, full, eps, reduction)``."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction("poisson_nll_loss", reduction))


FUNCTIONS = {name: getattr(F, name) for name in _SAME}
for _name, _function in (("dropout", F.dropout), ("alpha_dropout", F.alpha_dropout),
                         ("feature_alpha_dropout", F.feature_alpha_dropout), ("feature_dropout", F.dropout2d)):  # fmt: skip
    FUNCTIONS[f"{_name}_"] = _dropout_inplace(_name, _function)
FUNCTIONS.update({
    fn.__name__: fn
    for fn in (dropout, alpha_dropout, feature_alpha_dropout, feature_dropout, layer_norm, group_norm, batch_norm,
               instance_norm, rms_norm, embedding, threshold, rrelu, max_pool1d, max_pool2d, max_pool3d, max_pool1d_with_indices,
               adaptive_max_pool1d, binary_cross_entropy_with_logits, kl_div, cosine_embedding_loss,
               hinge_embedding_loss, margin_ranking_loss, triplet_margin_loss, poisson_nll_loss)
})  # fmt: skip
