"""The rest of PyTorch's nn.functional that numdiff builds from its own ops: in-place activations
(relu_, elu_, ...), the pools' `_with_indices` forms, adaptive_max_pool1d, power-average pools
(lp_pool1d/2d), max unpooling, pdist, gumbel_softmax, channel_shuffle, and the margin losses
multilabel_margin_loss and triplet_margin_with_distance_loss."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff import creation
from numdiff._ground.args import is_int
from numdiff.nn._layer_functions import rrelu
from numdiff.nn._losses import _reduce, _reduction
from numdiff.nn._margin_losses import pairwise_distance
from numdiff.ops import activation, arithmetic, indexing, norms, pool, pool3d, scatter, selection, shape
from numdiff.ops import reduction as reductions
from numdiff.ops._util import ensure_tensor, normalize_dim
from numdiff.ops.elementwise import PUBLIC as RULES
from numdiff.tensor import Tensor


def _inplace_activation(name: str, function: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def activation_(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return function(input, *args, inplace=True, **kwargs)

    activation_.__name__ = activation_.__qualname__ = f"{name}_"
    activation_.__doc__ = f"In-place {name}: F.{name}(input, ..., inplace=True)."
    return activation_


relu_ = _inplace_activation("relu", activation.relu)
elu_ = _inplace_activation("elu", activation.elu)
leaky_relu_ = _inplace_activation("leaky_relu", activation.leaky_relu)
hardtanh_ = _inplace_activation("hardtanh", activation.hardtanh)
selu_ = _inplace_activation("selu", activation.selu)
celu_ = _inplace_activation("celu", activation.celu)
threshold_ = _inplace_activation("threshold", activation.threshold)
rrelu_ = _inplace_activation("rrelu", rrelu)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False, return_indices: bool = True) -> tuple[Tensor, Tensor]:  # fmt: skip
    """max_pool1d's values and the flat positions of the maxima."""
    return pool.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False, return_indices: bool = True) -> tuple[Tensor, Tensor]:  # fmt: skip
    """max_pool2d's values and the flat positions of the maxima."""
    return pool.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = True) -> tuple[Tensor, Tensor]:
    """adaptive_max_pool2d's values and the flat positions of the maxima."""
    return pool.adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """The maximum over adaptive windows of the last dimension of a (N, C, L) or (C, L) input."""
    input = ensure_tensor("adaptive_max_pool1d", input)
    if input.ndim not in (2, 3):
        raise ValueError(f"adaptive_max_pool1d: expected a 2-D or 3-D input, got shape {tuple(input.shape)}")
    size = output_size[0] if isinstance(output_size, (tuple, list)) and len(output_size) == 1 else output_size
    if not is_int(size) or size <= 0:
        raise ValueError(f"adaptive_max_pool1d: output_size must be a positive int, got {output_size!r}")
    rows = shape.unsqueeze(input, -2)
    if not return_indices:  # the indices come from a second pass over the input: skip it
        return shape.squeeze(pool.adaptive_max_pool2d(rows, (1, size)), -2)
    values, indices = pool.adaptive_max_pool2d(rows, (1, size), True)
    return shape.squeeze(values, -2), shape.squeeze(indices, -2)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = True) -> tuple[Tensor, Tensor]:
    """adaptive_max_pool1d's values and the positions of the maxima."""
    return adaptive_max_pool1d(input, output_size, True)


def _lp_pool(op: str, pool_fn, input: Tensor, norm_type: Any, kernel_size: Any, stride: Any, ceil_mode: bool, dims: int) -> Tensor:
    input = ensure_tensor(op, input)
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)) or norm_type == 0 or norm_type != norm_type:
        raise ValueError(f"{op}: norm_type must be a non-zero number, got {norm_type!r}")
    kernel = (kernel_size,) * dims if is_int(kernel_size) else tuple(kernel_size)
    if norm_type in (float("inf"), -float("inf")):  # as PyTorch: max pooling of |x| (of -|x| for -inf)
        max_fn = (pool.max_pool1d, pool.max_pool2d, pool3d.max_pool3d)[dims - 1]
        sign = 1 if norm_type > 0 else -1
        return arithmetic.mul(max_fn(arithmetic.mul(RULES["abs"](input), sign), kernel, stride, 0, 1, ceil_mode), sign)
    try:
        average = pool_fn(arithmetic.pow(input, norm_type), kernel, stride, 0, ceil_mode)
    except ValueError as error:  # the window's checks are the average pool's: say which call failed
        raise ValueError(f"{op}: {error}") from error
    count = int(np.prod(kernel))
    # sign(x) * relu(|x|) keeps the power's sum at 0 or above, as PyTorch writes it.
    total = arithmetic.mul(arithmetic.mul(RULES["sign"](average), activation.relu(RULES["abs"](average))), count)
    return arithmetic.pow(total, 1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: Any, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """The power-average pool: (sum over each window of x^p)^(1/p), over the last dimension."""
    return _lp_pool("lp_pool1d", pool.avg_pool1d, input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input: Tensor, norm_type: Any, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """The power-average pool: (sum over each window of x^p)^(1/p), over the last two dimensions."""
    return _lp_pool("lp_pool2d", pool.avg_pool2d, input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input: Tensor, norm_type: Any, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """The power-average pool: (sum over each window of x^p)^(1/p), over the last three dimensions."""
    return _lp_pool("lp_pool3d", pool3d.avg_pool3d, input, norm_type, kernel_size, stride, ceil_mode, 3)


def _tuple(value: Any, dims: int) -> tuple[int, ...]:
    return (value,) * dims if is_int(value) else tuple(value)


def _max_unpool(op: str, dims: int, input: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any, output_size: Any) -> Tensor:
    input, indices = ensure_tensor(op, input), ensure_tensor(op, indices, "indices")
    if tuple(indices.shape) != tuple(input.shape):
        raise ValueError(f"{op}: indices of shape {tuple(indices.shape)} must match input of shape {tuple(input.shape)}")
    if input.ndim not in (dims + 1, dims + 2):
        raise ValueError(f"{op}: expected a {dims + 1}-D or {dims + 2}-D input, got shape {tuple(input.shape)}")
    kernel = _tuple(kernel_size, dims)
    strides = kernel if stride is None else _tuple(stride, dims)
    pads = _tuple(padding, dims)
    spatial = tuple(input.shape[-dims:])
    default = tuple((n - 1) * s - 2 * p + k for n, s, p, k in zip(spatial, strides, pads, kernel))
    if output_size is None:
        size = default
    else:
        size = tuple(output_size)[-dims:]
        if len(size) != dims or any(abs(a - b) >= s for a, b, s in zip(size, default, strides)):
            raise ValueError(f"{op}: output_size {tuple(output_size)} is not within a stride of the default {default}")
    lead = tuple(input.shape[:-dims])
    plane = int(np.prod(size))
    if indices.numel() and (int(reductions.amax(indices)) >= plane or int(reductions.amin(indices)) < 0):
        raise IndexError(f"{op}: an index is out of range for an output plane of {plane} elements {size}")
    flat_values = shape.reshape(input, (*lead, -1))
    flat_indices = shape.reshape(indices, (*lead, -1))
    zeros = creation.zeros((*lead, plane), dtype=input.dtype, device=input.device)
    return shape.reshape(scatter.scatter(zeros, -1, flat_indices, flat_values), (*lead, *size))


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None) -> Tensor:
    """The inverse of max_pool1d: each value back at its max's position, zeros elsewhere."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None) -> Tensor:
    """The inverse of max_pool2d: each value back at its max's position, zeros elsewhere."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None) -> Tensor:
    """The inverse of max_pool3d: each value back at its max's position, zeros elsewhere."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between every pair of rows i < j of the 2-D `input`, in row order."""
    input = ensure_tensor("pdist", input)
    if input.ndim != 2:
        raise ValueError(f"pdist: input must be 2-D, got shape {tuple(input.shape)}")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or p < 0:
        raise ValueError(f"pdist: p must be a non-negative number, got {p!r}")
    rows, cols = np.triu_indices(input.shape[0], 1)
    first = indexing.index_select(input, 0, creation.tensor(rows.astype(np.int64), device=input.device))
    second = indexing.index_select(input, 0, creation.tensor(cols.astype(np.int64), device=input.device))
    return norms.norm(arithmetic.sub(first, second), p, dim=1)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """A sample from the Gumbel-softmax distribution: softmax((logits + Gumbel noise) / tau);
    with `hard`, the one-hot of its argmax, with the soft sample's gradient (straight-through)."""
    logits = ensure_tensor("gumbel_softmax", logits)
    if not tau > 0:
        raise ValueError(f"gumbel_softmax: tau must be positive, got {tau!r}")
    dim = normalize_dim("gumbel_softmax", dim, max(logits.ndim, 1))
    noise = creation.empty(tuple(logits.shape), dtype=logits.dtype, device=logits.device).exponential_()
    gumbels = arithmetic.div(arithmetic.sub(logits, RULES["log"](noise)), tau)
    soft = activation.softmax(gumbels, dim)
    if not hard:
        return soft
    index = reductions.argmax(soft, dim, keepdim=True)
    one_hot = scatter.scatter(creation.zeros(tuple(logits.shape), dtype=logits.dtype, device=logits.device), dim, index, 1.0)
    return arithmetic.add(arithmetic.sub(one_hot, soft.detach()), soft)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """The channels (dimension 1) regrouped: (N, g, C/g, *) transposed to (N, C/g, g, *)."""
    input = ensure_tensor("channel_shuffle", input)
    if not is_int(groups) or groups <= 0:
        raise ValueError(f"channel_shuffle: groups must be a positive int, got {groups!r}")
    if input.ndim < 3:
        raise ValueError(f"channel_shuffle: expected an input of at least 3 dimensions, got shape {tuple(input.shape)}")
    channels = input.shape[1]
    if channels % groups:
        raise ValueError(f"channel_shuffle: {channels} channels do not divide into {groups} groups")
    rest = tuple(input.shape[2:])
    grouped = shape.reshape(input, (input.shape[0], groups, channels // groups, *rest))
    return shape.reshape(shape.transpose(grouped, 1, 2), tuple(input.shape))


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """The multi-class multi-label hinge loss: for each sample, the mean over classes of
    sum over its target classes j and other classes i of max(0, 1 - (x[j] - x[i])). A row of
    `target` lists class indices, ending at the first -1."""
    input, target = ensure_tensor("multilabel_margin_loss", input), ensure_tensor("multilabel_margin_loss", target, "target")
    if input.ndim not in (1, 2) or tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"multilabel_margin_loss: input and target must have the same 1-D or 2-D shape, got "
            f"{tuple(input.shape)} and {tuple(target.shape)}"
        )
    if target.is_floating_point():
        raise TypeError(f"multilabel_margin_loss: target must hold integer class indices, got {target.dtype}")
    x = input if input.ndim == 2 else shape.unsqueeze(input, 0)
    labels = np.asarray(target.tolist(), dtype=np.int64).reshape(x.shape)
    classes = x.shape[1]
    # A class listed twice before the -1 counts twice, as in PyTorch's loop over the list.
    times_listed = np.zeros(labels.shape, dtype=np.int64)
    for row, values in enumerate(labels):
        for value in values:
            if value == -1:
                break
            if not 0 <= value < classes:
                raise IndexError(f"multilabel_margin_loss: target class {value} is out of range for {classes} classes")
            times_listed[row, value] += 1
    pair_counts = times_listed[:, :, None] * (times_listed[:, None, :] == 0)
    gaps = arithmetic.sub(1.0, arithmetic.sub(shape.unsqueeze(x, 2), shape.unsqueeze(x, 1)))
    hinge = arithmetic.mul(activation.relu(gaps), creation.tensor(pair_counts, dtype=x.dtype, device=input.device))
    per_sample = arithmetic.div(reductions.sum(hinge, (1, 2)), classes)
    per_sample = per_sample if input.ndim == 2 else shape.reshape(per_sample, ())
    return _reduce(per_sample, _reduction("multilabel_margin_loss", size_average, reduce, reduction))


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *, distance_function: Any = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:  # fmt: skip
    """max(d(anchor, positive) - d(anchor, negative) + margin, 0) for a distance `d`
    (pairwise_distance by default); with `swap`, the closer of the two negatives' distances."""
    if not margin > 0:
        raise ValueError(f"triplet_margin_with_distance_loss: margin must be positive, got {margin!r}")
    distance = pairwise_distance if distance_function is None else distance_function
    to_positive = distance(anchor, positive)
    to_negative = distance(anchor, negative)
    if swap:
        to_negative = selection.minimum(to_negative, distance(positive, negative))
    losses = activation.relu(arithmetic.add(arithmetic.sub(to_positive, to_negative), margin))
    return _reduce(losses, _reduction("triplet_margin_with_distance_loss", None, None, reduction))
