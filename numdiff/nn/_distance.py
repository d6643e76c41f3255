"""Normalisation and angles between vectors: normalize and cosine_similarity (pairwise_distance is
with the margin losses that use it, numdiff/nn/_margin_losses.py).

Composed of numdiff.linalg.vector_norm (whose gradient at a zero vector is 0, as PyTorch's) and
elementwise ops, so they are differentiable and run wherever those run.
"""

from __future__ import annotations

from typing import Any

from numdiff.linalg import vector_norm
from numdiff.ops._util import broadcast_shape
from numdiff.tensor import Tensor


def _check(op: str, **tensors: Any) -> None:
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
        if t._data.dtype.kind not in "fV":
            raise TypeError(f"{op}: {name} must be a floating point tensor, got dtype {t.dtype!r}")


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """`input` divided by its `p`-norm along `dim`, the norm held at least `eps`."""
    _check("normalize", input=input)
    return input / vector_norm(input, p, dim, keepdim=True).clamp_min(eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between `x1` and `x2` along `dim` (they broadcast), each norm held
    at least `eps`; `dim` is reduced away."""
    _check("cosine_similarity", x1=x1, x2=x2)
    # Broadcast before normalizing: a size-1 `dim` must be normalized at its broadcast length.
    shape = broadcast_shape("cosine_similarity", x1.shape, x2.shape)
    x1, x2 = x1.expand(shape), x2.expand(shape)
    return (normalize(x1, 2.0, dim, eps) * normalize(x2, 2.0, dim, eps)).sum(dim)
