"""torch.linalg's norms (vector, matrix, both), cross and diagonal, composed of numdiff's ops; the
spectral and nuclear matrix norms come from the singular values (numdiff.linalg._factor)."""

from __future__ import annotations

import math
from typing import Any

from numdiff.linalg._factor import svdvals
from numdiff.ops import diagonals, norms, products
from numdiff.ops._util import ensure_tensor, normalize_dim
from numdiff.ops.reduction import amax, amin
from numdiff.ops.reduction import sum as sum_
from numdiff.tensor import Tensor


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """The `ord`-norm of the elements over `dim` (all when None): any real ord, inf and -inf.

    >>> numdiff.linalg.vector_norm(numdiff.tensor([3.0, -4.0]), ord=1)
    tensor(7.)
    """
    if isinstance(ord, str):
        raise TypeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    return norms.norm(x, ord, dim, keepdim, dtype)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple = (-2, -1), keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A002, N803
    """The matrix norm over the two dims `dim`: "fro", "nuc" (the sum of the singular values), 2 / -2
    (the largest / smallest singular value), 1 / -1 (largest / smallest column sum of magnitudes),
    inf / -inf (largest / smallest row sum).

    >>> numdiff.linalg.matrix_norm(numdiff.tensor([[1.0, -2.0], [3.0, 4.0]]), ord=1)
    tensor(6.)
    """
    A = ensure_tensor("linalg.matrix_norm", A, "A")  # noqa: N806 - torch's argument name
    if A.ndim < 2:
        raise ValueError(f"linalg.matrix_norm: expects a tensor with at least 2 dimensions, got shape {tuple(A.shape)}")
    if len(dim) != 2:
        raise ValueError(f"linalg.matrix_norm: dim must name two dimensions, got {dim!r}")
    rows, cols = (normalize_dim("linalg.matrix_norm", d, A.ndim) for d in dim)
    if rows == cols:
        raise ValueError(f"linalg.matrix_norm: dims {tuple(dim)} name the same dimension")
    if ord == "fro":
        return norms.norm(A, "fro", (rows, cols), keepdim, dtype)
    if ord in ("nuc", 2, -2):
        s = svdvals(norms.floating_input("linalg.matrix_norm", A, dtype).movedim((rows, cols), (-2, -1)))
        out = s.sum(-1) if ord == "nuc" else (s[..., 0] if ord == 2 else s[..., -1])
        for d in sorted((rows, cols)) if keepdim else ():
            out = out.unsqueeze(d)
        return out
    if ord not in (1, -1, math.inf, -math.inf):
        raise ValueError(
            f"linalg.matrix_norm: ord={ord!r} is not supported ('fro', 'nuc', 2, -2, 1, -1, inf, -inf)"
        )
    A = norms.floating_input("linalg.matrix_norm", A, dtype)  # noqa: N806
    summed, across = (rows, cols) if abs(ord) == 1 else (cols, rows)
    totals = sum_(A.abs(), summed, keepdim=True)
    out = (amax if ord > 0 else amin)(totals, across, keepdim=True)
    return out if keepdim else out.squeeze((rows, cols))


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A002, N803
    """vector_norm for one dim (or a 1-D input), matrix_norm for two dims (or a 2-D input); with
    ord and dim both None, the 2-norm of all elements.

    >>> numdiff.linalg.norm(numdiff.tensor([[3.0, 0.0], [0.0, 4.0]]))
    tensor(5.)
    """
    A = ensure_tensor("linalg.norm", A, "A")  # noqa: N806 - torch's argument name
    if dim is not None and not isinstance(dim, int):
        dim = tuple(dim)
    if ord is None:
        if dim is not None and isinstance(dim, tuple) and len(dim) == 2:
            return matrix_norm(A, "fro", dim, keepdim, dtype=dtype)
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if dim is None:
        if A.ndim not in (1, 2):
            raise ValueError(f"linalg.norm: with ord given and dim None the input must be 1-D or 2-D, got shape {tuple(A.shape)}")
        dim = (0,) if A.ndim == 1 else (-2, -1)
    if isinstance(dim, int) or len(dim) == 1:
        return vector_norm(A, ord, dim, keepdim, dtype=dtype)
    if len(dim) == 2:
        return matrix_norm(A, ord, dim, keepdim, dtype=dtype)
    raise ValueError(f"linalg.norm: dim must name one or two dimensions, got {dim!r}")


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """Cross product of 3-vectors along `dim` (the last by default), the inputs broadcast."""
    return products.cross(input, other, dim)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: N803
    """The diagonals of the matrices in the last two dims (a view), as torch.linalg.diagonal."""
    return diagonals.diagonal(A, offset, dim1, dim2)
