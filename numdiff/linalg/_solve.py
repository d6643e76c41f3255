"""torch.linalg's solvers and inverses: solve, solve_triangular, inv, pinv, lstsq, matrix_exp, the
_ex forms, lu_solve, ldl_factor/ldl_solve, householder_product, and torch's cholesky_solve and
cholesky_inverse.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._lazy import lazy_module
from numdiff.linalg._checks import (
    InvExResult,
    LDLFactorExResult,
    LDLFactorResult,
    LinAlgError,
    LstsqResult,
    SolveExResult,
    batch_entry,
    first_failure,
    host_batches,
    integer_tensor,
    matrix,
    same_dtype,
)
from numdiff.linalg._factor import _on_host, svdvals
from numdiff.ops import linalg_solve as ops
from numdiff.tensor import Tensor

scipy_linalg = lazy_module("scipy.linalg")


def _as_matrix_rhs(op: str, A: Tensor, B: Tensor, left: bool = True) -> tuple[Tensor, bool]:  # noqa: N803
    """B as (*, n, k), and whether it was a batch of vectors (PyTorch's rule: B.ndim == 1, or B has
    A's batch shape and one dim less)."""
    if not isinstance(B, Tensor):
        raise TypeError(f"{op}: argument 'B' must be a Tensor, not {type(B).__name__}")
    vector = B.ndim == 1 or (left and B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        B = B.unsqueeze(-1)  # noqa: N806
    matrix(op, B, "B", square=False)
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise ValueError(
            f"{op}: incompatible shapes of A {tuple(A.shape)} and B {tuple(B.shape)}: A's order {n} must match "
            f"B's {'rows' if left else 'columns'}"
        )
    try:
        np.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]))
    except ValueError:
        raise ValueError(f"{op}: the batch dims of A {tuple(A.shape)} and B {tuple(B.shape)} do not broadcast") from None
    same_dtype(op, A, B)
    return B, vector


def _singular(op: str, A: Tensor) -> LinAlgError:  # noqa: N803
    """The error for a solve LAPACK found singular, naming the (first) singular entry."""
    failing = first_failure(op, A, np.linalg.inv) or 0
    return LinAlgError(
        f"{op}: {batch_entry(failing, A.shape[:-2])}The solver failed because the input matrix is singular."
    )


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:  # noqa: N803
    """X with A X = B (or X A = B when not `left`); B a matrix or, PyTorch's rule, a vector batch.

    >>> numdiff.linalg.solve(numdiff.tensor([[2.0, 0.0], [0.0, 4.0]]), numdiff.tensor([2.0, 2.0]))
    tensor([1.0000, 0.5000])
    """
    A = matrix("linalg.solve", A)  # noqa: N806
    B, vector = _as_matrix_rhs("linalg.solve", A, B, left)  # noqa: N806
    if A.device.type != "cpu":  # the GPU kernels take matrices of one batch shape
        A, B = _same_batch(A, B)  # noqa: N806
    try:
        X = ops.Solve.apply(A, B) if left else ops.Solve.apply(A.mT, B.mT).mT  # noqa: N806
    except np.linalg.LinAlgError:
        raise _singular("linalg.solve", A) from None
    return X.squeeze(-1) if vector else X


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> SolveExResult:  # noqa: N803
    """(X, info): info k > 0 where U[k-1, k-1] of A's LU is zero (that X is NaN)."""
    if check_errors:
        X = solve(A, B, left=left)  # noqa: N806
        return SolveExResult(X, integer_tensor(np.zeros(A.shape[:-2], np.int32), A))
    A = matrix("linalg.solve_ex", A)  # noqa: N806
    info = _lu_info(A)
    if not info.any():
        return SolveExResult(solve(A, B, left=left), integer_tensor(info.reshape(A.shape[:-2]), A))
    bad = integer_tensor((info > 0).reshape(A.shape[:-2] + (1, 1)), A)
    safe = A.masked_fill(bad, 0.0) + bad.to(A.dtype) * A.new_tensor(np.eye(A.shape[-1]))
    X = solve(safe, B, left=left)  # noqa: N806
    mask = bad.squeeze(-1) if X.ndim == A.ndim - 1 else bad
    return SolveExResult(X.masked_fill(mask, float("nan")), integer_tensor(info.reshape(A.shape[:-2]), A))


def _lu_info(A: Tensor) -> np.ndarray:  # noqa: N803
    info = []
    for m in host_batches(A):
        _, _, code = scipy_linalg.lapack.dgetrf(m) if m.dtype == np.float64 else scipy_linalg.lapack.sgetrf(m)
        info.append(code)
    return np.asarray(info, dtype=np.int32)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,  # noqa: N803
                     unitriangular: bool = False) -> Tensor:
    """X with A X = B (X A = B when not `left`) for triangular A, reading only its `upper` or lower
    triangle (and not its diagonal when `unitriangular`). A zero on the diagonal gives inf, as LAPACK."""
    A = matrix("linalg.solve_triangular", A)  # noqa: N806
    if not isinstance(B, Tensor) or B.ndim < 2:
        raise ValueError(f"linalg.solve_triangular: B must be a matrix or batch of matrices, got "
                         f"{tuple(B.shape) if isinstance(B, Tensor) else type(B).__name__}")
    B, _ = _as_matrix_rhs("linalg.solve_triangular", A, B, left)  # noqa: N806
    if A.device.type != "cpu":
        A, B = _same_batch(A, B)  # noqa: N806
    return ops.SolveTriangular.apply(A, B, upper=bool(upper), left=bool(left), unitriangular=bool(unitriangular))


def _same_batch(A: Tensor, B: Tensor) -> tuple[Tensor, Tensor]:  # noqa: N803
    """A and B expanded to their common batch shape (differentiably), for the GPU kernels."""
    batch = tuple(np.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])))
    return A.expand(*batch, *A.shape[-2:]), B.expand(*batch, *B.shape[-2:])


def inv(A: Tensor) -> Tensor:  # noqa: N803
    """The inverse; LinAlgError naming the entry for a singular matrix."""
    A = matrix("linalg.inv", A)  # noqa: N806
    try:
        return ops.Inv.apply(A)  # a CUDA tensor's by the batched LU kernels on its device
    except np.linalg.LinAlgError:
        failing = first_failure("linalg.inv", A, np.linalg.inv) or 0
        raise LinAlgError(f"linalg.inv: {batch_entry(failing, A.shape[:-2])}The diagonal element "
                          f"{_zero_pivot(host_batches(A)[failing])} is zero, the inversion could not be completed "
                          "because the input matrix is singular.") from None


def _zero_pivot(m: np.ndarray) -> int:
    _, _, code = scipy_linalg.lapack.dgetrf(m.astype(np.float64))
    return int(code)


def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvExResult:  # noqa: N803
    """(inverse, info): info k > 0 for a singular entry, whose inverse is NaN."""
    if check_errors:
        out = inv(A)
        return InvExResult(out, integer_tensor(np.zeros(A.shape[:-2], np.int32), A))
    A = matrix("linalg.inv_ex", A)  # noqa: N806
    eye = A.new_tensor(np.broadcast_to(np.eye(A.shape[-1]), A.shape).copy())
    X, info = solve_ex(A, eye)  # noqa: N806
    return InvExResult(X, info)


def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:  # noqa: N803
    """The Moore-Penrose pseudo-inverse (singular values below max(atol, rtol * s_max) are dropped)."""
    A = matrix("linalg.pinv", A, square=False)  # noqa: N806
    if atol is not None:
        s = svdvals(A.detach())
        tol = max(float(atol), float(rtol or 0) * float(s.max()))
        rcond = tol / max(float(s.max()), np.finfo(A.dtype.numpy).tiny)
    else:
        rcond = float(rtol) if rtol is not None else max(A.shape[-2:]) * float(np.finfo(A.dtype.numpy).eps)
    return _on_host("linalg.pinv", A, lambda a: ops.Pinv.apply(a, rtol=rcond, hermitian=bool(hermitian)))


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> LstsqResult:  # noqa: N803
    """The least-squares solution of A X = B, as (solution, residuals, rank, singular_values).

    residuals (the squared residual norm per column) are given for tall full-rank A by every
    driver but 'gelsy' (the CPU default), rank by every driver but 'gels', and singular_values by
    'gelsd' and 'gelss', as in PyTorch; the solution is pinv(A) B,
    differentiable in A and B."""
    drivers = ("gels", "gelsy", "gelsd", "gelss")
    if driver is not None and driver not in drivers:
        raise ValueError(f"linalg.lstsq: driver must be one of {drivers}, got {driver!r}")
    A = matrix("linalg.lstsq", A, square=False)  # noqa: N806
    if driver is None:  # PyTorch's defaults: gelsy on the CPU, gels on CUDA (the only one there)
        driver = "gelsy" if A.device.type == "cpu" else "gels"
    vector = isinstance(B, Tensor) and B.ndim == A.ndim - 1
    B = B.unsqueeze(-1) if vector else B  # noqa: N806
    matrix("linalg.lstsq", B, "B", square=False)
    same_dtype("linalg.lstsq", A, B)
    if B.shape[-2] != A.shape[-2]:
        raise ValueError(f"linalg.lstsq: A {tuple(A.shape)} and B {tuple(B.shape)} must have the same number of rows")
    solution = pinv(A, rtol=rcond) @ B
    s = svdvals(A.detach())
    tol = (rcond if rcond is not None else max(A.shape[-2:]) * float(np.finfo(A.dtype.numpy).eps)) * s[..., :1]
    rank = (s > tol).sum(-1)
    m, n = A.shape[-2], A.shape[-1]
    if m > n and bool((rank.numpy() == n).all()) and driver != "gelsy":
        residuals = ((A @ solution - B) ** 2).sum(-2)
    else:
        residuals = A.new_zeros((0,))
    singular = s if driver in ("gelsd", "gelss") else A.new_zeros((0,))
    if driver == "gels":  # gels assumes full rank and reports none, as in PyTorch
        rank = integer_tensor(np.zeros((0,), dtype=np.int64), A)
    return LstsqResult(solution.squeeze(-1) if vector else solution, residuals, rank, singular)


def matrix_exp(A: Tensor) -> Tensor:  # noqa: N803
    """The matrix exponential e^A (Padé approximation with scaling and squaring)."""
    A = matrix("linalg.matrix_exp", A)  # noqa: N806
    return _on_host("linalg.matrix_exp", A, ops.MatrixExp.apply)


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:  # noqa: N803
    """X with A X = B given A's Cholesky factor L (A = L L^T), or U (A = U^T U) when `upper`."""
    L = matrix("cholesky_solve", L)  # noqa: N806
    B, _ = _as_matrix_rhs("cholesky_solve", L, B)  # noqa: N806
    if upper:
        L = L.mT  # noqa: N806
    Y = ops.SolveTriangular.apply(L, B, upper=False, left=True, unitriangular=False)  # noqa: N806
    return ops.SolveTriangular.apply(L.mT, Y, upper=True, left=True, unitriangular=False)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:  # noqa: N803
    """A^-1 from A's Cholesky factor."""
    L = matrix("cholesky_inverse", L)  # noqa: N806
    eye = L.new_tensor(np.broadcast_to(np.eye(L.shape[-1]), L.shape).copy())
    return cholesky_solve(eye, L, upper)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:  # noqa: N803
    """X with A X = B from lu_factor's (LU, pivots); differentiable in LU and B."""
    LU = matrix("linalg.lu_solve", LU)  # noqa: N806
    if not left:
        return lu_solve(LU, pivots, B.mT, left=True, adjoint=not adjoint).mT
    B, _ = _as_matrix_rhs("linalg.lu_solve", LU, B)  # noqa: N806
    perm = _permutation(pivots.numpy().reshape(-1, pivots.shape[-1]), LU.shape[-1])
    batch = tuple(np.broadcast_shapes(tuple(LU.shape[:-2]), tuple(B.shape[:-2])))
    if batch != LU.shape[:-2] or batch != B.shape[:-2]:  # batch dims broadcast, as in torch
        perm = np.broadcast_to(perm.reshape(LU.shape[:-2] + perm.shape[-1:]), batch + perm.shape[-1:])
        LU, B = LU.expand(batch + LU.shape[-2:]), B.expand(batch + B.shape[-2:])  # noqa: N806
    if not adjoint:  # A = P L U: X = U^-1 L^-1 P^T B
        rows = integer_tensor(perm.reshape(batch + (LU.shape[-1],)).astype(np.int64), B)
        Pb = B.gather(-2, rows.unsqueeze(-1).expand(*rows.shape, B.shape[-1])) if batch else B[rows]  # noqa: N806
        Y = ops.SolveTriangular.apply(LU, Pb, upper=False, left=True, unitriangular=True)  # noqa: N806
        return ops.SolveTriangular.apply(LU, Y, upper=True, left=True, unitriangular=False)
    # A^T X = B: U^T L^T P^T X = B, so X = P L^-T U^-T B.
    Y = ops.SolveTriangular.apply(LU.mT, B, upper=False, left=True, unitriangular=False)  # noqa: N806
    Z = ops.SolveTriangular.apply(LU.mT, Y, upper=True, left=True, unitriangular=True)  # noqa: N806
    inverse = np.argsort(perm, axis=-1).reshape(batch + (LU.shape[-1],)).astype(np.int64)
    rows = integer_tensor(inverse, B)
    return Z.gather(-2, rows.unsqueeze(-1).expand(*rows.shape, Z.shape[-1])) if batch else Z[rows]


def _permutation(pivots: np.ndarray, n: int) -> np.ndarray:
    """The row order of P^T A from LAPACK's 1-based sequential swaps."""
    out = []
    for swaps in pivots:
        order = list(range(n))
        for i, j in enumerate(swaps):
            order[i], order[j - 1] = order[j - 1], order[i]
        out.append(order)
    return np.asarray(out)


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> LDLFactorExResult:  # noqa: N803
    """(LD, pivots, info) of a symmetric A by Bunch-Kaufman pivoting, LAPACK's sytrf layout. No gradient."""
    A = matrix("linalg.ldl_factor", A)  # noqa: N806
    if A.requires_grad:
        raise RuntimeError("linalg.ldl_factor: not differentiable (as in PyTorch); pass A.detach()")
    sytrf = scipy_linalg.lapack.dsytrf if A.dtype.numpy == np.float64 else scipy_linalg.lapack.ssytrf
    factors, pivots, info = [], [], []
    for m in host_batches(A):
        ld, ipiv, code = sytrf(m, lower=1)
        factors.append(np.tril(ld))
        pivots.append(ipiv)
        info.append(code)
    shape = A.shape[:-2]
    n = A.shape[-1]
    result = LDLFactorExResult(A.new_tensor(np.asarray(factors).reshape(A.shape)),
                               integer_tensor(np.asarray(pivots, dtype=np.int32).reshape(shape + (n,)), A),
                               integer_tensor(np.asarray(info, dtype=np.int32).reshape(shape), A))
    if check_errors and any(info):
        raise LinAlgError(f"linalg.ldl_factor: {batch_entry(int(np.flatnonzero(info)[0]), shape)}the factor D is "
                          "singular")
    return result


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> LDLFactorResult:  # noqa: N803
    """(LD, pivots) of a symmetric A (see ldl_factor_ex)."""
    LD, pivots, _ = ldl_factor_ex(A, hermitian=hermitian, check_errors=True)  # noqa: N806
    return LDLFactorResult(LD, pivots)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:  # noqa: N803
    """X with A X = B from ldl_factor's (LD, pivots). No gradient."""
    LD = matrix("linalg.ldl_solve", LD)  # noqa: N806
    B, _ = _as_matrix_rhs("linalg.ldl_solve", LD, B)  # noqa: N806
    sytrs = scipy_linalg.lapack.dsytrs if LD.dtype.numpy == np.float64 else scipy_linalg.lapack.ssytrs
    factors, ipivs = host_batches(LD), pivots.numpy().reshape(-1, LD.shape[-1])
    rhs = np.broadcast_to(B.detach().numpy(), LD.shape[:-2] + tuple(B.shape[-2:])).reshape(-1, *B.shape[-2:])
    out = [sytrs(f, p, b, lower=1)[0] for f, p, b in zip(factors, ipivs, rhs)]
    return B.new_tensor(np.asarray(out).reshape(LD.shape[:-2] + tuple(B.shape[-2:])))


def householder_product(A: Tensor, tau: Tensor) -> Tensor:  # noqa: N803
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T with v_i below A's diagonal (orgqr).

    Composed of differentiable ops, so it is differentiable in A and tau (twice)."""
    A = matrix("linalg.householder_product", A, square=False)  # noqa: N806
    m, n = A.shape[-2], A.shape[-1]
    if not isinstance(tau, Tensor) or tau.shape[-1] > n or m < n:
        raise ValueError(f"linalg.householder_product: needs m >= n >= k, got A {tuple(A.shape)} and tau "
                         f"{tuple(tau.shape) if isinstance(tau, Tensor) else type(tau).__name__}")
    eye = A.new_tensor(np.eye(m))
    q = eye.expand(*A.shape[:-2], m, m) if A.ndim > 2 else eye
    below = A.tril(-1)
    for i in range(tau.shape[-1]):
        unit = A.new_tensor(np.eye(m)[:, i])
        v = below[..., :, i] + unit
        q = q - tau[..., i, None, None] * ((q @ v.unsqueeze(-1)) @ v.unsqueeze(-2))
    return q[..., :, :n]
