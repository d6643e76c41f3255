"""torch.linalg's functions composed of other ops: matrix_power, multi_dot, vecdot, vander,
tensorinv, tensorsolve, matrix_rank and cond."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from numdiff.linalg._checks import integer_tensor, matrix
from numdiff.linalg._factor import svdvals
from numdiff.linalg._norms import matrix_norm
from numdiff.linalg._solve import inv, solve
from numdiff.ops._util import normalize_dim
from numdiff.ops.linalg import matmul
from numdiff.tensor import Tensor


def matrix_power(A: Tensor, n: int) -> Tensor:  # noqa: N803
    """A^n for an integer n (the identity for 0, powers of inv(A) for negative n), by repeated squaring."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {type(n).__name__}")
    A = matrix("linalg.matrix_power", A)  # noqa: N806
    if n == 0:  # the identity, written over a copy of A so that A gets its (zero) gradient, as in PyTorch
        return A.clone().copy_(A.new_tensor(np.broadcast_to(np.eye(A.shape[-1]), A.shape)))
    base = inv(A) if n < 0 else A
    result = None
    power = abs(int(n))
    while power:
        if power & 1:
            result = base if result is None else result @ base
        power >>= 1
        if power:
            base = base @ base
    return result


def multi_dot(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """The product of 2-D matrices in the cheapest order (the first may be 1-D, a row; the last 1-D,
    a column), chosen by the classic dynamic programme over the chain's dimensions."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise ValueError(f"linalg.multi_dot: expected at least 2 tensors, got {len(tensors)}")
    first_vector, last_vector = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = [tensors[0].unsqueeze(0) if first_vector else tensors[0]] + tensors[1:-1] + \
        [tensors[-1].unsqueeze(-1) if last_vector else tensors[-1]]
    for i, t in enumerate(mats):
        if t.ndim != 2:
            raise ValueError(f"linalg.multi_dot: tensor {i} must be 2-D (the first and last may be 1-D), "
                             f"got shape {tuple(tensors[i].shape)}")
    dims = [mats[0].shape[0]] + [t.shape[1] for t in mats]
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise ValueError(f"linalg.multi_dot: tensors {i} {tuple(mats[i].shape)} and {i + 1} "
                             f"{tuple(mats[i + 1].shape)} cannot be multiplied")
    count = len(mats)
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i: int, j: int) -> Tensor:
        return mats[i] if i == j else matmul(product(i, split[i][j]), product(split[i][j] + 1, j))

    result = product(0, count - 1)
    if first_vector:
        result = result.squeeze(0)
    if last_vector:
        result = result.squeeze(-1)
    return result


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of x and y along `dim`, the other dims broadcast."""
    return (x * y).sum(dim)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of the last dim: columns x^0, x^1, ..., x^(N-1)."""
    if not isinstance(x, Tensor) or x.ndim < 1:
        raise ValueError("linalg.vander: x must be a tensor of at least one dimension")
    n = x.shape[-1] if N is None else int(N)
    if n < 1:
        raise ValueError(f"linalg.vander: N must be positive, got {N}")
    powers = x.new_tensor(np.arange(n)).to(x.dtype) if x.dtype.is_floating_point else x.new_tensor(np.arange(n))
    return x.unsqueeze(-1) ** powers


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:  # noqa: N803
    """The inverse of A seen as a linear map from its last dims to its first `ind` dims."""
    if ind <= 0:
        raise ValueError(f"linalg.tensorinv: ind must be positive, got {ind}")
    rows, cols = A.shape[:ind], A.shape[ind:]
    n_rows, n_cols = int(np.prod(rows)), int(np.prod(cols))
    if n_rows != n_cols:
        raise ValueError(f"linalg.tensorinv: the product of the first {ind} dims ({n_rows}) must equal the product "
                         f"of the rest ({n_cols}) for shape {tuple(A.shape)}")
    return inv(A.reshape(n_rows, n_cols)).reshape(*cols, *rows)


def tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None) -> Tensor:  # noqa: N803
    """X with tensordot(A, X, X.ndim) = B."""
    if dims is not None:
        dims = [normalize_dim("linalg.tensorsolve", d, A.ndim) for d in dims]
        order = [d for d in range(A.ndim) if d not in dims] + dims
        A = A.permute(*order)  # noqa: N806
    result_shape = A.shape[B.ndim:]
    n = int(np.prod(result_shape))
    if int(np.prod(B.shape)) != n:
        raise ValueError(f"linalg.tensorsolve: A {tuple(A.shape)} and B {tuple(B.shape)} do not make a square system")
    return solve(A.reshape(n, n), B.reshape(n)).reshape(*result_shape)


def matrix_rank(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False,  # noqa: N803
                tol: Any = None) -> Tensor:
    """The number of singular values above max(atol, rtol * s_max) (rtol defaults to eps * max(m, n))."""
    A = matrix("linalg.matrix_rank", A, square=False)  # noqa: N806
    s = svdvals(A.detach())
    if tol is not None:
        atol = tol
    if rtol is None:
        rtol = 0.0 if atol is not None and float(atol) > 0 else max(A.shape[-2:]) * float(np.finfo(A.dtype.numpy).eps)
    threshold = np.maximum(float(atol or 0.0), float(rtol) * s.numpy()[..., :1]) if s.shape[-1] else 0.0
    return integer_tensor((s.numpy() > threshold).sum(-1).astype(np.int64), s)


def cond(A: Tensor, p: Any = None) -> Tensor:  # noqa: N803
    """The condition number in the `p` norm: s_max / s_min for None or 2 (-2: the inverse ratio),
    else norm(A, p) * norm(inv(A), p) for 'fro', 'nuc', inf, -inf, 1, -1."""
    if p in (None, 2, -2):
        A = matrix("linalg.cond", A, square=False)  # noqa: N806
        s = svdvals(A)
        ratio = s[..., 0] / s[..., -1]
        return ratio if p != -2 else 1 / ratio
    A = matrix("linalg.cond", A)  # noqa: N806
    return matrix_norm(A, p) * matrix_norm(inv(A), p)
