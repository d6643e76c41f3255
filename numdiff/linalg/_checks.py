"""What every numdiff.linalg function checks before LAPACK runs, its errors, and its result types.

A matrix argument must be a float32 or float64 tensor of at least two dims (square where the
function needs it) holding no NaN or inf; a failed factorization (a singular matrix, one that is
not positive definite) raises `LinAlgError` naming the function and the batch entry, as PyTorch
does. CUDA tensors are computed on the host and moved back (numdiff has no LAPACK on the GPU).
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np

from numdiff.backend import backend_for
from numdiff.tensor import Tensor


class LinAlgError(RuntimeError):
    """A factorization or solve failed on the input's values (torch.linalg.LinAlgError)."""


EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
LUFactorResult = namedtuple("LUFactorResult", ["LU", "pivots"])
LUFactorExResult = namedtuple("LUFactorExResult", ["LU", "pivots", "info"])
LUResult = namedtuple("LUResult", ["P", "L", "U"])
LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])
CholeskyExResult = namedtuple("CholeskyExResult", ["L", "info"])
InvExResult = namedtuple("InvExResult", ["inverse", "info"])
SolveExResult = namedtuple("SolveExResult", ["result", "info"])
LDLFactorResult = namedtuple("LDLFactorResult", ["LD", "pivots"])
LDLFactorExResult = namedtuple("LDLFactorExResult", ["LD", "pivots", "info"])


def batch_entry(index: int, batch_shape: tuple) -> str:
    """PyTorch's way of naming a failing matrix: '(Batch element 3): ' ('' for a single matrix)."""
    return f"(Batch element {index}): " if batch_shape else ""


def matrix(op: str, value: Any, name: str = "A", square: bool = True) -> Tensor:
    """`value` checked as a float32/float64 matrix (or batch) holding finite values."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}: argument '{name}' must be a Tensor, not {type(value).__name__}")
    if value.dtype.numpy not in (np.float32, np.float64):
        raise TypeError(
            f"{op}: expected a float32 or float64 tensor for '{name}', got {value.dtype} (convert with "
            f"{name}.double() or {name}.float(); numdiff's LAPACK path has no half or integer form)"
        )
    if value.ndim < 2:
        raise ValueError(f"{op}: '{name}' must have at least 2 dimensions, got shape {tuple(value.shape)}")
    if square and value.shape[-1] != value.shape[-2]:
        raise ValueError(
            f"{op}: '{name}' must be batches of square matrices, but they are {value.shape[-2]} by "
            f"{value.shape[-1]} matrices (shape {tuple(value.shape)})"
        )
    finite(op, value, name)
    return value


def finite(op: str, value: Tensor, name: str) -> None:
    array = backend_for(value._data).to_host(value._data)
    if array.size and not np.isfinite(array).all():
        flat = array.reshape((-1,) + array.shape[-2:]) if array.ndim >= 2 else array.reshape(1, -1)
        bad = int(np.flatnonzero(~np.isfinite(flat).reshape(len(flat), -1).all(axis=1))[0])
        where = batch_entry(bad, array.shape[:-2]) if array.ndim > 2 else ""
        raise ValueError(f"{op}: {where}'{name}' holds NaN or inf; LAPACK's result would be meaningless")


def host_batches(value: Tensor) -> np.ndarray:
    """The matrices of `value` on the host, flattened to (batch, m, n)."""
    array = backend_for(value._data).to_host(value._data)
    return array.reshape((math.prod(array.shape[:-2]),) + array.shape[-2:])  # -1 is ambiguous when empty


def first_failure(op: str, value: Tensor, test: Any) -> int | None:
    """The first batch entry for which ``test(matrix)`` raises numpy's LinAlgError, or None."""
    for index, m in enumerate(host_batches(value)):
        try:
            test(m)
        except np.linalg.LinAlgError:
            return index
    return None


def integer_tensor(values: Any, like: Tensor) -> Tensor:
    """An integer or bool result (info, pivots, ranks, masks) as a tensor on `like`'s device, keeping its dtype."""
    # np.array, not np.ascontiguousarray, which makes a 0-d array (an unbatched info or rank) 1-d.
    return Tensor._wrap(np.array(values, order="C"), None, None).to(like.device)


def same_dtype(op: str, a: Tensor, b: Tensor) -> None:
    if a.dtype is not b.dtype:
        raise TypeError(f"{op}: A and B must have the same dtype, got {a.dtype} and {b.dtype}")
