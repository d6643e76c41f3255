"""Functional forms of the non-kernel layers: dropout (and its channel forms), embedding, pad,
one_hot (the normalisation layers' are in numdiff/nn/_normalization.py).

All are compositions of differentiable ops; running statistics and max_norm renormalisation are
in-place updates made under no_grad, as in PyTorch.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from numdiff import _inplace
from numdiff._batched import VmapDataDependentError
from numdiff._ground.args import is_int
from numdiff._host_functions import host_function
from numdiff._vmap_level import per_example
from numdiff.autograd.grad_mode import is_grad_enabled, no_grad
from numdiff.backend import holds_values, to_host
from numdiff.creation import full, rand
from numdiff.nn._sparse_embedding import sparse_rows
from numdiff.ops._axis_blend import BLEND_DTYPES, AxisBlend
from numdiff.ops._util import vmapped
from numdiff.ops.indexing import GetItem, index_put
from numdiff.ops.selection import where
from numdiff.overrides import dispatch, is_overridable
from numdiff.tensor import Tensor


def _check_tensor(op: str, name: str, t: Any, floating: bool = True) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: argument '{name}' must be a Tensor, not {type(t).__name__}")
    if floating and not t.is_floating_point():
        raise TypeError(f"{op}: expected '{name}' to be a floating point tensor, got dtype {t.dtype!r}")
    return t


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p); identity when not training.

    The mask comes from numdiff's default generator, so ``numdiff.manual_seed`` fixes it.
    """
    if is_overridable(input):  # a numdiff.fx Proxy records the call
        return dispatch(dropout, (input, p, training, inplace), {})
    _check_tensor("dropout", "input", input)
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"dropout: p must be a number, got {p!r} ({type(p).__name__})")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        scale = full(tuple(input.shape), 0.0, dtype=input.dtype, device=input.device)
    else:
        keep = rand(*input.shape, dtype=input.dtype, device=input.device) >= p
        scale = keep.to(input.dtype) * (1.0 / (1.0 - p))
    if inplace:
        return _inplace.apply_inplace(input, "dropout_", lambda x: x * scale)
    return input * scale


def _channel_dropout(op: str, input: Tensor, p: float, training: bool, inplace: bool, batched_ndim: int) -> Tensor:
    """Zero whole channels (every element of an (n, c) pair at once) with probability p."""
    _check_tensor(op, "input", input)
    if input.ndim not in (batched_ndim - 1, batched_ndim):
        if op == "dropout1d" or input.ndim == 0:
            raise ValueError(
                f"{op}: expected a {batched_ndim - 1}-D (unbatched) or {batched_ndim}-D (batched) input, "
                f"got shape {tuple(input.shape)}"
            )
        # PyTorch only warns here and treats the input as unbatched: its first dim is the channel.
        warnings.warn(
            f"{op}: received a {input.ndim}-D input of shape {tuple(input.shape)}; it expects "
            f"{batched_ndim - 1}-D (unbatched) or {batched_ndim}-D (batched) inputs, so dim 0 is taken "
            "as the channel dim (PyTorch's behaviour). Use dropout for element-wise dropout.",
            UserWarning,
            stacklevel=3,
        )
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    lead = 2 if input.ndim == batched_ndim else 1  # (N, C) or just C
    mask_shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    if p == 1.0:
        scale = full(mask_shape, 0.0, dtype=input.dtype, device=input.device)
    else:
        keep = rand(*mask_shape, dtype=input.dtype, device=input.device) >= p
        scale = keep.to(input.dtype) * (1.0 / (1.0 - p))
    if inplace:
        return _inplace.apply_inplace(input, f"{op}_", lambda x: x * scale)
    return input * scale


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, L) or (C, L) input with probability p, scaling the rest by 1 / (1 - p)."""
    return _channel_dropout("dropout1d", input, p, training, inplace, 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, H, W) or (C, H, W) input with probability p, scaling the rest by 1 / (1 - p)."""
    return _channel_dropout("dropout2d", input, p, training, inplace, 4)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, D, H, W) or (C, D, H, W) input with probability p."""
    return _channel_dropout("dropout3d", input, p, training, inplace, 5)


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of `weight` (num_embeddings, dim) at the integer indices `input`: shape (*input.shape, dim).

    The row at `padding_idx` gets no gradient; `max_norm` renormalises looked-up rows in place.
    With `sparse` the weight's gradient is a sparse COO tensor of the rows looked up (numdiff.nn._sparse_embedding).
    """
    _check_tensor("embedding", "input", input, floating=False)
    _check_tensor("embedding", "weight", weight)
    if input._data.dtype.kind not in "iu":
        raise TypeError(f"embedding: input must be an integer tensor of indices, got dtype {input.dtype!r}")
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got shape {tuple(weight.shape)}")
    if vmapped(input):
        # The indices differ per vmap example (range checks, max_norm's rows): one example at a time.

        return per_example(
            "embedding",
            lambda i, w: embedding(i, w, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse),
            input,
            weight,
        )
    rows = weight.shape[0]
    indices = to_host(input._data) if holds_values(input._data) else None  # meta indices: shapes only
    if indices is not None and indices.size and (indices.min() < 0 or indices.max() >= rows):
        raise IndexError(
            f"embedding: indices must be in [0, {rows - 1}] for a weight of shape {tuple(weight.shape)}, "
            f"got values in [{indices.min()}, {indices.max()}]"
        )
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise ValueError(f"embedding: padding_idx must be within [{-rows}, {rows - 1}], got {padding_idx}")
        padding_idx %= rows
    if sparse and weight.requires_grad and is_grad_enabled():
        return _sparse_lookup(input, weight, indices, padding_idx, max_norm, norm_type, scale_grad_by_freq)
    if max_norm is not None and indices is not None:
        _renorm_rows(weight, np.unique(indices), max_norm, norm_type)
    if indices is not None and indices.dtype.kind == "i":
        # The rows were range-checked just above: the gather op on the host index array that
        # weight[input] would record, without indexing's key normalisation (which checks the same
        # ranges again on a stand-in array: 3-4 of the lookup's 11 us for 8 tokens).
        looked_up = GetItem.apply(weight, key=(indices,))
    else:  # unsigned (uint8 indexes as a mask, as weight[input] reads it) or meta indices
        looked_up = weight[input]
    if scale_grad_by_freq and looked_up.requires_grad and indices is not None:
        counts = np.bincount(indices.reshape(-1), minlength=rows).astype(np.float64)
        inverse = Tensor._wrap((1.0 / counts[indices])[..., None], None, None)
        inverse = inverse.to(dtype=weight.dtype, device=weight.device)
        looked_up.register_hook(lambda grad: grad * inverse)
        # A separate node after the hook, so hooks the caller registers on the output see the
        # unscaled gradient, as they do in PyTorch.
        looked_up = looked_up[...]
    if padding_idx is not None and looked_up.requires_grad:
        is_padding = (input == padding_idx).unsqueeze(-1)
        looked_up = where(is_padding, looked_up.detach(), looked_up)
    return looked_up


def _renorm_rows(weight: Tensor, rows: np.ndarray, max_norm: float, norm_type: float) -> None:
    """Scale the listed rows whose norm exceeds max_norm down to max_norm (PyTorch's embedding_renorm_)."""
    if rows.size == 0:
        return
    with no_grad():
        selected = weight[rows]
        norms = selected.abs().pow(norm_type).sum(1, keepdim=True).pow(1.0 / norm_type)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = selected * scale


def _sparse_lookup(
    input: Tensor, weight: Tensor, indices: np.ndarray | None, padding_idx: int | None, max_norm: float | None,
    norm_type: float, scale_grad_by_freq: bool,
) -> Tensor:
    """F.embedding with sparse=True, its arguments checked: max_norm's renormalisation, then the
    rows with a sparse gradient for the weight (padding_idx's entries left out of it)."""
    if scale_grad_by_freq:
        raise RuntimeError(
            "embedding: scale_grad_by_freq not supported with sparse gradients (PyTorch refuses it in backward); "
            "use sparse=False or scale_grad_by_freq=False"
        )
    if max_norm is not None and indices is not None:
        _renorm_rows(weight, np.unique(indices), max_norm, norm_type)
    return sparse_rows("embedding", weight, input, padding_idx).reshape(*input.shape, weight.shape[1])


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last len(pad) // 2 dims: pad = (left, right) for the last dim, then the one before...

    Modes: "constant" (with `value`, negative amounts crop), "reflect", "replicate", "circular".

    >>> pad(numdiff.ones(1, 2), (1, 1))
    tensor([[0., 1., 1., 0.]])
    """
    _check_tensor("pad", "input", input, floating=False)
    if isinstance(pad, (str, bytes)) or not hasattr(pad, "__iter__") or not all(is_int(p) for p in pad):
        raise TypeError(f"pad: pad must be a sequence of ints (left, right, top, bottom, ...), got {pad!r}")
    amounts = [int(p) for p in pad]
    if len(amounts) % 2:
        raise ValueError(f"pad: padding length must be divisible by 2, got {len(amounts)} values {tuple(amounts)}")
    if len(amounts) // 2 > input.ndim:
        raise ValueError(f"pad: padding {tuple(amounts)} pads {len(amounts) // 2} dims but the input has only {input.ndim} (shape {tuple(input.shape)})")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    if mode != "constant" and value not in (None, 0, 0.0):
        raise ValueError(f"pad: value is only used with mode='constant', got value={value} with mode={mode!r}")
    per_dim = [(input.ndim - 1 - i, amounts[2 * i], amounts[2 * i + 1]) for i in range(len(amounts) // 2)]
    if mode == "constant":
        return _pad_constant(input, per_dim, 0.0 if value is None else value)
    for dim, before, after in per_dim:
        _check_index_padding(input, dim, before, after, mode)
    return _pad_by_index(input, [(before, after) for _, before, after in reversed(per_dim)], mode)


def _pad_constant(input: Tensor, per_dim: list[tuple[int, int, int]], value: float) -> Tensor:
    crop = [slice(None)] * input.ndim
    for dim, before, after in per_dim:
        crop[dim] = slice(max(-before, 0), input.shape[dim] - max(-after, 0))
        if crop[dim].start > crop[dim].stop:
            raise ValueError(f"pad: negative padding ({before}, {after}) removes more than the {input.shape[dim]} elements of dimension {dim}")
    cropped = input[tuple(crop)]
    shape = list(cropped.shape)
    place = [slice(None)] * input.ndim
    for dim, before, after in per_dim:
        start = max(before, 0)
        place[dim] = slice(start, start + shape[dim])
        shape[dim] += max(before, 0) + max(after, 0)
    canvas = full(tuple(shape), value, dtype=input.dtype, device=input.device)
    return index_put(canvas, tuple(place), cropped)


def _check_index_padding(input: Tensor, dim: int, before: int, after: int, mode: str) -> None:
    size = input.shape[dim]
    if before < 0 or after < 0:
        raise ValueError(f"pad: mode {mode!r} needs non-negative padding, got ({before}, {after}) for dimension {dim}")
    if mode == "reflect" and (before >= size or after >= size):
        raise ValueError(
            f"pad: reflect padding ({before}, {after}) must be less than the size {size} of dimension {dim} "
            f"(input shape {tuple(input.shape)})"
        )
    if mode == "replicate" and size == 0:
        raise ValueError(f"pad: replicate padding needs a non-empty dimension {dim}, input shape {tuple(input.shape)}")
    if mode == "circular" and (before > size or after > size):
        raise ValueError(
            f"pad: circular padding ({before}, {after}) must be at most the size {size} of dimension {dim} "
            f"(input shape {tuple(input.shape)})"
        )


def _padded_positions(size: int, before: int, after: int, mode: str) -> np.ndarray:
    """The source index of each padded position along one dim."""
    positions = np.arange(-before, size + after)
    if mode == "reflect":
        positions = np.abs(positions)
        return np.where(positions >= size, 2 * (size - 1) - positions, positions)
    if mode == "replicate":
        return np.clip(positions, 0, size - 1)
    return positions % size


@functools.lru_cache(maxsize=16)
def _padding_table(sizes: tuple[int, ...], amounts: tuple[tuple[int, int], ...], mode: str, dtype: np.dtype) -> tuple:
    """``(index, weight)``, read-only (O, 1) tables for axis_blend: output o of the padded trailing
    dims (flattened) copies flat input position ``index[o, 0]`` of ``sizes``. A table holds 16
    bytes per padded position of one image (a net pads a few shapes, so few are kept)."""
    positions = [_padded_positions(size, before, after, mode) for size, (before, after) in zip(sizes, amounts)]
    index = np.ravel_multi_index(np.meshgrid(*positions, indexing="ij"), sizes).reshape(-1, 1).astype(np.int64)
    weight = np.ones(index.shape, dtype)
    index.flags.writeable = weight.flags.writeable = False
    return index, weight


def _pad_by_index(input: Tensor, amounts: list[tuple[int, int]], mode: str) -> Tensor:
    """Pad the trailing len(amounts) dims, (before, after) each, outermost first, by index. Floating
    inputs take one axis_blend over the padded dims flattened (one pass, one op, whose gradient is
    the blend kernels' adjoint: a pad of H and W ran two passes and six ops); others copy by index."""
    count = len(amounts)
    lead, sizes = tuple(input.shape[: input.ndim - count]), tuple(input.shape[input.ndim - count :])
    padded = tuple(size + before + after for size, (before, after) in zip(sizes, amounts))
    dtype = np.dtype(input._data.dtype)
    if dtype in BLEND_DTYPES:  # one copy per row; its gradient a Numba scatter, not np.add.at
        index, weight = _padding_table(sizes, tuple(amounts), mode, dtype)
        flat = input.reshape(math.prod(lead), math.prod(sizes), 1)
        return AxisBlend.apply(flat, index=index, weight=weight).reshape(*lead, *padded)
    out = input
    for axis, (size, (before, after)) in enumerate(zip(sizes, amounts), start=len(lead)):
        out = out[(slice(None),) * axis + (_padded_positions(size, before, after, mode),)]
    return out


@host_function
def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 tensor of shape (*tensor.shape, num_classes) with a 1 at each index (no gradient).

    >>> one_hot(numdiff.tensor([0, 2]), 3)
    tensor([[1, 0, 0],
            [0, 0, 1]])
    """
    _check_tensor("one_hot", "tensor", tensor, floating=False)
    if tensor._data.dtype.kind not in "iu":
        raise TypeError(f"one_hot: expected an integer tensor of class indices, got dtype {tensor.dtype!r}")
    if not is_int(num_classes):
        raise TypeError(f"one_hot: num_classes must be an int, got {num_classes!r} ({type(num_classes).__name__})")
    if vmapped(tensor):
        if num_classes == -1:
            raise VmapDataDependentError(
                "one_hot: under vmap num_classes must be given (inferring it from the values would give "
                "each example its own shape)"
            )

        return per_example("one_hot", lambda t: one_hot(t, num_classes), tensor)
    if not holds_values(tensor._data):
        if num_classes == -1:
            raise NotImplementedError("one_hot: a meta tensor's number of classes depends on its values, which it "
                                      "does not have; pass num_classes")
        return Tensor._wrap(np.empty((*tensor.shape, num_classes), np.int64, like=tensor._data), None, None)
    values = to_host(tensor._data)
    if num_classes == -1:
        if values.size == 0:
            raise ValueError("one_hot: can not infer the number of classes from an empty tensor; pass num_classes")
        num_classes = int(values.max()) + 1
    if num_classes < 0 or (values.size and values.min() < 0):
        raise ValueError(f"one_hot: class values and num_classes must be non-negative, got num_classes={num_classes}")
    if values.size and values.max() >= num_classes:
        raise ValueError(f"one_hot: class values must be smaller than num_classes={num_classes}, got {int(values.max())}")
    out = (values[..., None] == np.arange(num_classes)).astype(np.int64)
    return Tensor._wrap(out, None, None).to(device=tensor.device)


__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "embedding", "one_hot", "pad"]
