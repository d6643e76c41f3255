"""Reductions composed of sum, amax and amin: norm, cdist and count_nonzero."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff._lazy import lazy_module
from numdiff.ops._reduction_constants import eager_host_data
from numdiff.ops._util import broadcast_shape, ensure_tensor, half_computed_in_float32
from numdiff.ops.joining import cat
from numdiff.ops.linalg import matmul
from numdiff.ops.reduction import _reduction_dims, amax, amin
from numdiff.ops.reduction import sum as sum_
from numdiff.ops.selection import clamp_min, where
from numdiff.tensor import Tensor

_linalg = lazy_module("numdiff.linalg")  # norm(p='nuc') needs an SVD; numdiff.linalg imports numdiff.ops


def _root(total: Tensor, p: float) -> Tensor:
    """total ** (1 / p), with value and gradient 0 where total is 0 (the root's slope is infinite
    there; PyTorch's norm gives the zero subgradient)."""
    host = eager_host_data(total)
    if host is not None and host.all():
        # No total is 0 (the usual case: a gradient penalty's row norms): both wheres would select
        # `total` everywhere, the identity to every derivative order, so the same numbers come
        # without their two ops and their two backward nodes (in a create_graph walk, four).
        return total.sqrt() if p == 2 else total ** (1.0 / p)
    # The mask is a constant of the gradient: on a host array, NumPy's comparison, not a recorded op.
    zero = total == 0 if host is None else Tensor._wrap(np.asarray(host == 0), None, None)
    safe = where(zero, 1.0, total)
    return where(zero, 0.0, safe.sqrt() if p == 2 else safe ** (1.0 / p))


def floating_input(op: str, input: Any, dtype: Any) -> Tensor:
    """A norm's input: a floating-point tensor, converted to `dtype` when given (never narrowed)."""
    input = ensure_tensor(op, input)
    if input._data.dtype.kind not in "fV":
        raise TypeError(f"{op}: expected a floating point tensor as input, got {input.dtype}; convert it with .float()")
    if dtype is not None:
        target = _dtype.to_dtype(dtype)
        if not np.can_cast(input._data.dtype, target.numpy, casting="safe"):
            raise TypeError(f"{op}: dtype {target} would narrow the input's {input.dtype}; pass a wider dtype or convert the input")
        input = input.to(target)
    return input


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """The p-norm over `dim` (all elements when None), as torch.norm: p="fro" or 2 is the
    square root of the sum of squares, 1 the sum of magnitudes, inf / -inf the largest / smallest
    magnitude, 0 the count of nonzeros (zero gradient), other p (sum |x|^p)^(1/p).
    Floating-point inputs only; the gradient where the norm is 0 is 0, as in PyTorch.

    >>> numdiff.norm(numdiff.tensor([3.0, 4.0]))
    tensor(5.)
    """
    input = floating_input("norm", input, dtype)
    if isinstance(p, str):
        if p == "nuc":  # the sum of singular values, of the last two dims or the two dims given
            dims = tuple(range(input.ndim)) if dim is None else (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
            if len(dims) != 2:
                raise ValueError(f"norm: p='nuc' needs two dims (a matrix), got dims {dims} of shape {tuple(input.shape)}")
            return _linalg.matrix_norm(input, "nuc", dim=dims, keepdim=keepdim)
        if p != "fro":
            raise ValueError(f"norm: p={p!r} is not supported (only 'fro', 'nuc' and numbers)")
        if dim is not None and not isinstance(dim, (int, np.integer)) and len(dim) not in (1, 2):
            raise ValueError(f"norm: p='fro' takes one or two dims, got dim={dim!r}")
        p = 2
    elif isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"norm: p must be a number or 'fro', got {type(p).__name__}")
    p = float(p)
    if input._data.dtype == np.float16:
        return half_computed_in_float32(input, lambda x: norm(x, p, dim, keepdim))
    dims = _reduction_dims("norm", dim, input.ndim)
    if (p < 0 or p == math.inf) and input.numel() == 0 and (not dims or any(input.shape[d] == 0 for d in dims)):
        # No identity: the sum of |x| ** p for p < 0 would be 0 and its root infinite (PyTorch raises).
        raise RuntimeError(f"norm: the {p} norm of an empty tensor of shape {tuple(input.shape)} is undefined")
    if p == math.inf or p == -math.inf:
        return (amax if p > 0 else amin)(input.abs(), dims, keepdim)
    if p == 0:
        # A count with a zero gradient, as PyTorch's: the unselected branch x * 0 ties the result
        # to x (it is NaN only where x is infinite, and there the count's 1 is selected).
        with np.errstate(invalid="ignore"):
            return sum_(where(input != 0, 1.0, input * 0.0), dims, keepdim)
    # |x| only where a branch reads it: the 2-norm's squares need none (one op fewer per call).
    if p == 1:
        return sum_(input.abs(), dims, keepdim)
    if p == 2:
        return _root(sum_(input * input, dims, keepdim), 2)
    magnitude = input.abs()
    if 0 < p < 1:
        # |x| ** p has an infinite slope at 0, where PyTorch's gradient is 0: the power of a safe 1
        # there, masked (the mask a constant of the gradient, as in _root). Shifted and multiplied,
        # not selected by where: a zero element's gradient is 0 times the rest, so NaN where the
        # norm is NaN, as PyTorch's.
        host = eager_host_data(magnitude)
        zero = magnitude == 0 if host is None else Tensor._wrap(np.asarray(host == 0), None, None)
        zero = zero.to(magnitude.dtype)
        return _root(sum_((magnitude + zero) ** p * (1.0 - zero), dims, keepdim), p)
    if p < 0:
        # No zero guard: a zero element makes the sum infinite and the norm 0, and a zero sum (every
        # element infinite) makes the norm infinite, as PyTorch's (the guard would give 0).
        with np.errstate(divide="ignore"):  # 0 ** p is inf on purpose
            return sum_(magnitude**p, dims, keepdim) ** (1.0 / p)
    return _root(sum_(magnitude ** p, dims, keepdim), p)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R, M), as a
    (..., P, R) tensor; batch dims broadcast. For p=2, `compute_mode` picks PyTorch's matrix-product
    form (one GEMM, see `_euclidean_by_matmul`) by PyTorch's rule: always for "use_mm_for_euclid_dist",
    when P or R exceeds 25 for the default, never for "donot_use_mm_for_euclid_dist". Otherwise the
    distance comes from the differences directly (a (..., P, R, M) intermediate), with gradient 0
    where a distance is 0, as PyTorch's.

    >>> numdiff.cdist(numdiff.tensor([[0.0, 0.0]]), numdiff.tensor([[3.0, 4.0], [1.0, 0.0]]))
    tensor([[5., 1.]])
    """
    x1 = ensure_tensor("cdist", x1, "x1")
    x2 = ensure_tensor("cdist", x2, "x2")
    if x1.ndim < 2 or x2.ndim < 2:
        raise ValueError(f"cdist: x1 and x2 must have at least 2 dimensions, got shapes {tuple(x1.shape)} and {tuple(x2.shape)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise ValueError(f"cdist: x1 and x2 must have the same number of columns, got shapes {tuple(x1.shape)} and {tuple(x2.shape)}")
    if x1.dtype is not x2.dtype:
        raise TypeError(f"cdist: x1 is {x1.dtype} but x2 is {x2.dtype}; they must have the same dtype")
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)) or p < 0:
        raise ValueError(f"cdist: p must be a non-negative number, got {p!r}")
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"cdist: unknown compute_mode {compute_mode!r}")
    broadcast_shape("cdist (batch dimensions)", tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    if p == 2 and _euclid_uses_matmul(compute_mode, x1.shape[-2], x2.shape[-2]):
        return _euclidean_by_matmul(x1, x2)
    differences = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return norm(differences, float(p), dim=-1)


def _euclid_uses_matmul(compute_mode: str, rows1: int, rows2: int) -> bool:
    """PyTorch's choice between the matrix-product and the difference form of the p=2 distance."""
    if compute_mode == "use_mm_for_euclid_dist":
        return True
    return compute_mode == "use_mm_for_euclid_dist_if_necessary" and (rows1 > 25 or rows2 > 25)


def _euclidean_by_matmul(x1: Tensor, x2: Tensor) -> Tensor:
    """sqrt(|a|^2 + |b|^2 - 2 a.b) for every pair of rows, as PyTorch's _euclidean_dist: one GEMM of
    [-2 x1, |x1|^2, 1] against [x2, 1, |x2|^2], so the squared norms ride in the product's last two
    columns. Cancellation can round a small distance (PyTorch's numbers round the same way); the
    squared distance is clamped at 1e-30 before the root, which gives gradient 0 there. The
    (..., P, R, M) differences are never formed: forward and backward are three GEMMs."""
    x1_norm = sum_(x1 * x1, -1, True)
    x2_norm = sum_(x2 * x2, -1, True)
    x1_padded = cat([x1 * -2.0, x1_norm, x1_norm.new_ones(x1_norm.shape)], -1)
    x2_padded = cat([x2, x2_norm.new_ones(x2_norm.shape), x2_norm], -1)
    return clamp_min(matmul(x1_padded, x2_padded.mT), 1e-30).sqrt()


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    """The number of nonzero elements over `dim` (an int or tuple; all when None), as int64.

    >>> numdiff.count_nonzero(numdiff.tensor([[0, 1], [2, 3]]), dim=0)
    tensor([1, 2])
    """
    input = ensure_tensor("count_nonzero", input)
    return sum_(input != 0, _reduction_dims("count_nonzero", dim, input.ndim))


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The `p`-norm of ``input - other`` over all their (broadcast) elements."""
    from numdiff.linalg import vector_norm  # numdiff.linalg builds on this module

    return vector_norm(input - other, p)
