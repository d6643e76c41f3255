"""numdiff.nn.utils.fusion, as torch.nn.utils.fusion: an evaluation-mode BatchNorm folded into
the conv or Linear before it, as one layer with the BatchNorm's scale and shift in its weight and
bias (inference only: the fused layer no longer normalises by batch statistics).

The ``*_weights`` functions take the tensors and return the two new Parameters; the ``*_eval``
functions take the modules and return a fused copy of the conv or Linear.
"""

from __future__ import annotations

import copy

from numdiff import creation
from numdiff.autograd.grad_mode import no_grad
from numdiff.nn.modules.module import Module
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Tensor


def _bn_scale(bn_rv: Tensor, bn_eps: float, bn_w: Tensor | None) -> Tensor:
    scale = (bn_rv + bn_eps).rsqrt()
    return scale if bn_w is None else bn_w * scale


def _check_eval(op: str, *modules: Module) -> None:
    training = [type(m).__name__ for m in modules if m.training]
    if training:
        raise ValueError(f"{op}: fusion is only for modules in eval mode; {', '.join(training)} is training (call .eval() first)")


def fuse_conv_bn_weights(
    conv_w: Tensor,
    conv_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of a conv that computes ``bn(conv(x))`` for an eval-mode BatchNorm with
    running statistics `bn_rm`, `bn_rv`; the BatchNorm's channels are the conv's output channels
    (dim 0 of the weight, or dim 1 for a transposed conv).

    >>> w, b = fuse_conv_bn_weights(numdiff.ones(2, 1, 1, 1), None, numdiff.zeros(2), numdiff.full((2,), 3.0), 1.0, None, None)
    >>> w.flatten()
    tensor([0.5000, 0.5000], requires_grad=True)
    """
    channels = conv_w.shape[1 if transpose else 0]
    if tuple(bn_rm.shape) != (channels,) or tuple(bn_rv.shape) != (channels,):
        raise ValueError(
            f"fuse_conv_bn_weights: running statistics of shape {tuple(bn_rm.shape)} and {tuple(bn_rv.shape)} do not match "
            f"the conv weight {tuple(conv_w.shape)}'s {channels} output channels"
        )
    shape = [1] * conv_w.ndim
    shape[1 if transpose else 0] = -1
    conv_b = creation.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_b = creation.zeros_like(bn_rm) if bn_b is None else bn_b
    scale = _bn_scale(bn_rv, bn_eps, bn_w)
    fused_w = (conv_w * scale.reshape(shape)).to(conv_w.dtype)
    fused_b = ((conv_b - bn_rm) * scale + bn_b).to(conv_b.dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_weights(
    linear_w: Tensor,
    linear_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of a Linear that computes ``bn(linear(x))`` for an eval-mode
    BatchNorm1d over its output features (or a one-feature BatchNorm, broadcast over them)."""
    features = linear_w.shape[0]
    if tuple(bn_rm.shape) not in ((features,), (1,)):
        raise ValueError(
            f"fuse_linear_bn_weights: running statistics of shape {tuple(bn_rm.shape)} must have the Linear's "
            f"{features} output features or 1 feature"
        )
    linear_b = creation.zeros_like(bn_rm) if linear_b is None else linear_b
    bn_b = creation.zeros_like(bn_rm) if bn_b is None else bn_b
    scale = _bn_scale(bn_rv, bn_eps, bn_w)
    fused_w = linear_w * scale.unsqueeze(-1)
    fused_b = (linear_b - bn_rm) * scale + bn_b
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """A copy of `conv` whose weight and bias include the evaluation-mode BatchNorm `bn` after it."""
    _check_eval("fuse_conv_bn_eval", conv, bn)
    fused = copy.deepcopy(conv)
    with no_grad():
        fused.weight, fused.bias = fuse_conv_bn_weights(
            fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose
        )
    return fused


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """A copy of `linear` whose weight and bias include the evaluation-mode BatchNorm1d `bn` after it."""
    _check_eval("fuse_linear_bn_eval", linear, bn)
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise ValueError(
            f"fuse_linear_bn_eval: the Linear's out_features ({linear.out_features}) must equal the BatchNorm's "
            f"num_features ({bn.num_features}), or the BatchNorm must have 1 feature"
        )
    fused = copy.deepcopy(linear)
    with no_grad():
        fused.weight, fused.bias = fuse_linear_bn_weights(
            fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
        )
    return fused


__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]
