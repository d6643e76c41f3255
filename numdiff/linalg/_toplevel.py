"""PyTorch's top-level and Tensor-method names for linear algebra (torch.inverse, torch.svd,
x.cholesky_solve(...), ...), with their own argument orders and conventions, on numdiff.linalg."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from numdiff.linalg import _compose, _factor, _solve
from numdiff.linalg._checks import SlogdetResult, matrix
from numdiff.tensor import Tensor

SVDLegacyResult = namedtuple("SVDLegacyResult", ["U", "S", "V"])
TriangularSolveResult = namedtuple("TriangularSolveResult", ["solution", "cloned_coefficient"])
LUUnpackResult = namedtuple("LUUnpackResult", ["P", "L", "U"])


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky: linalg.cholesky with `upper` positional."""
    return _factor.cholesky(input, upper=upper)


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """X with A X = input, given A's Cholesky factor `input2`."""
    return _solve.cholesky_solve(input, input2, upper)


def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """A^-1 from A's Cholesky factor."""
    return _solve.cholesky_inverse(input, upper)


def inverse(input: Tensor) -> Tensor:
    """torch.inverse: linalg.inv."""
    return _solve.inv(input)


def det(input: Tensor) -> Tensor:
    """torch.det: linalg.det."""
    return _factor.det(input)


def logdet(input: Tensor) -> Tensor:
    """log(det(A)): NaN where the determinant is negative, -inf where it is zero."""
    sign, logabs = _factor.slogdet(input)
    return logabs + (sign.new_tensor(np.where(sign.numpy() < 0, np.nan, 0.0)))


def slogdet(input: Tensor) -> SlogdetResult:
    """torch.slogdet: (sign, log|det|)."""
    return _factor.slogdet(input)


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> SVDLegacyResult:
    """torch.svd's convention: (U, S, V) with A = U diag(S) V^T (V, not Vh); zeros for U and V when
    not `compute_uv`."""
    U, S, Vh = _factor.svd(input, full_matrices=not some)  # noqa: N806
    if not compute_uv:
        return SVDLegacyResult(U.detach() * 0, S, Vh.detach().mT * 0)
    return SVDLegacyResult(U, S, Vh.mT)


def qr(input: Tensor, some: bool = True) -> Any:
    """torch.qr: linalg.qr in 'reduced' mode, or 'complete' when not `some`."""
    return _factor.qr(input, mode="reduced" if some else "complete")


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: linalg.pinv with a relative tolerance."""
    return _solve.pinv(input, rtol=rcond)


def matrix_exp(input: Tensor) -> Tensor:
    """torch.matrix_exp: linalg.matrix_exp."""
    return _solve.matrix_exp(input)


def matrix_power(input: Tensor, n: int) -> Tensor:
    """torch.matrix_power: linalg.matrix_power."""
    return _compose.matrix_power(input, n)


def chain_matmul(*matrices: Tensor) -> Tensor:
    """torch.chain_matmul: linalg.multi_dot of the arguments."""
    return _compose.multi_dot(matrices)


def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """torch.orgqr: linalg.householder_product."""
    return _solve.householder_product(input, tau)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: N803
    """torch.lu_solve: linalg.lu_solve with the right-hand side first."""
    return _solve.lu_solve(LU_data, LU_pivots, b)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,  # noqa: N803
              unpack_pivots: bool = True) -> LUUnpackResult:
    """(P, L, U) from lu_factor's packed LU and pivots."""
    LU = matrix("lu_unpack", LU_data, "LU_data", square=False)  # noqa: N806
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    eye = LU.new_tensor(np.eye(m, k))
    L = LU[..., :, :k].tril(-1) + eye  # noqa: N806
    U = LU[..., :k, :].triu()  # noqa: N806
    perm = _solve._permutation(LU_pivots.numpy().reshape(-1, LU_pivots.shape[-1]), m)
    p = np.zeros(perm.shape + (m,), dtype=LU.dtype.numpy)
    np.put_along_axis(p, perm[..., None, :], 1.0, axis=-2)
    P = LU.new_tensor(p.reshape(LU.shape[:-2] + (m, m)))  # noqa: N806
    empty = LU.new_zeros((0,))
    return LUUnpackResult(P if unpack_pivots else empty, L if unpack_data else empty, U if unpack_data else empty)


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,  # noqa: N803
                     unitriangular: bool = False) -> TriangularSolveResult:
    """torch.triangular_solve: (X, a copy of A) with op(A) X = b, op(A) = A^T when `transpose`."""
    coefficient = A.mT if transpose else A
    solution = _solve.solve_triangular(coefficient, b, upper=upper != transpose, unitriangular=unitriangular)
    return TriangularSolveResult(solution, A.clone())


FUNCTIONS = {
    "cholesky": cholesky, "cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse,
    "inverse": inverse, "det": det, "logdet": logdet, "slogdet": slogdet, "svd": svd, "qr": qr,
    "pinverse": pinverse, "matrix_exp": matrix_exp, "matrix_power": matrix_power, "chain_matmul": chain_matmul,
    "orgqr": orgqr, "lu_solve": lu_solve, "lu_unpack": lu_unpack, "triangular_solve": triangular_solve,
}  # fmt: skip

# Tensor methods: the same functions with the tensor as first argument.
METHODS = {name: fn for name, fn in FUNCTIONS.items() if name not in ("chain_matmul", "lu_unpack")}
