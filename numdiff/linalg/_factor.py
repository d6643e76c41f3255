"""torch.linalg's factorizations: cholesky, eigh/eigvalsh, svd/svdvals, qr, det/slogdet, eig/eigvals, lu.

Each checks its input (numdiff.linalg._checks), runs the differentiable ops of
numdiff.ops.linalg_factor, and names the failing batch entry when LAPACK cannot factor it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._lazy import lazy_module
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import is_grad_enabled
from numdiff.backend import backend_for
from numdiff.linalg._checks import (
    CholeskyExResult,
    EighResult,
    EigResult,
    LinAlgError,
    LUFactorExResult,
    LUFactorResult,
    LUResult,
    QRResult,
    SlogdetResult,
    SVDResult,
    batch_entry,
    first_failure,
    host_batches,
    integer_tensor,
    matrix,
)
from numdiff.ops import _lapack
from numdiff.ops import linalg_factor as ops
from numdiff.ops.joining import cat
from numdiff.ops.linalg_solve import SolveTriangular
from numdiff.tensor import Tensor

scipy_linalg = lazy_module("scipy.linalg")


def _on_host(op: str, a: Tensor, compute: Any) -> Any:
    """`compute(a)` for a host tensor; for a CUDA one, on a host copy, with the results moved back."""
    if a.device.type == "cpu":
        return compute(a)
    result = compute(a.cpu())
    if isinstance(result, tuple):
        return type(result)(*(r.to(a.device) if isinstance(r, Tensor) else r for r in result))
    return result.to(a.device)


def cholesky(A: Tensor, *, upper: bool = False, out: Any = None) -> Tensor:  # noqa: N803
    """L with A = L L^T (or U with A = U^T U when `upper`), for symmetric positive-definite A.

    >>> numdiff.linalg.cholesky(numdiff.tensor([[4.0, 2.0], [2.0, 3.0]]))
    tensor([[2.0000, 0.0000],
            [1.0000, 1.4142]])
    """
    result, info = _cholesky(A, upper, "linalg.cholesky")
    if info is not None:
        raise LinAlgError(
            f"linalg.cholesky: {batch_entry(info[0], A.shape[:-2])}The factorization could not be completed "
            f"because the input is not positive-definite (the leading minor of order {info[1]} is not "
            "positive-definite)."
        )
    return result


def _cholesky(A: Tensor, upper: bool, op: str) -> tuple[Tensor | None, tuple | None]:  # noqa: N803
    A = matrix(op, A)  # noqa: N806
    try:
        low = ops.Cholesky.apply(A)  # on the host through LAPACK, on a GPU through the batched kernel
    except np.linalg.LinAlgError:  # LAPACK's potrf stopped at a minor: find the entry and the order
        failing = first_failure(op, A, np.linalg.cholesky)
        return None, (failing, _lapack.failing_minor(host_batches(A)[failing]))
    return (low.mT if upper else low), None


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:  # noqa: N803
    """(L, info): info is 0 where the factorization succeeded, else the order of the failing minor
    (that entry's L is NaN); with `check_errors` a failure raises as cholesky does."""
    if check_errors:
        L = cholesky(A, upper=upper)  # noqa: N806
        return CholeskyExResult(L, integer_tensor(np.zeros(A.shape[:-2], np.int32), A))
    A = matrix("linalg.cholesky_ex", A)  # noqa: N806
    batches = host_batches(A)
    info = np.zeros(len(batches), dtype=np.int32)
    for index, m in enumerate(batches):
        info[index] = _lapack.failing_minor(m)
    if not info.any():
        return CholeskyExResult(cholesky(A, upper=upper), integer_tensor(info.reshape(A.shape[:-2]), A))
    safe = np.where(info[:, None, None] > 0, np.eye(A.shape[-1]), batches)
    L = ops.Cholesky.apply(A.new_tensor(safe.reshape(A.shape)))  # noqa: N806
    L = L.masked_fill(integer_tensor((info > 0).reshape(A.shape[:-2] + (1, 1)), A), float("nan"))  # noqa: N806
    return CholeskyExResult(L.mT if upper else L, integer_tensor(info.reshape(A.shape[:-2]), A))


def _symmetric_upper(UPLO: str, op: str) -> bool:  # noqa: N803
    if UPLO not in ("L", "U"):
        raise ValueError(f"{op}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO == "U"


def eigh(A: Tensor, UPLO: str = "L") -> EighResult:  # noqa: N803
    """Eigenvalues (ascending) and orthonormal eigenvectors of symmetric A, read from one triangle.

    The eigenvectors' gradient is defined only for distinct eigenvalues; where two coincide it is
    inf or NaN, as in PyTorch. The eigenvalues' gradient is always defined.
    """
    upper = _symmetric_upper(UPLO, "linalg.eigh")
    A = matrix("linalg.eigh", A)  # noqa: N806
    with _lapack.one_factorization():
        values = _on_host("linalg.eigh", A, lambda a: ops.EighValues.apply(a, upper=upper))
        vectors = _on_host("linalg.eigh", A, lambda a: ops.EighVectors.apply(a, upper=upper))
    return EighResult(values, vectors)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    """Eigenvalues (ascending) of symmetric A."""
    upper = _symmetric_upper(UPLO, "linalg.eigvalsh")
    A = matrix("linalg.eigvalsh", A)  # noqa: N806
    return _on_host("linalg.eigvalsh", A, lambda a: ops.EighValues.apply(a, upper=upper))


class _FullComplement(Function):
    """The columns a full SVD adds past min(m, n): a basis with no defined gradient."""

    @staticmethod
    def forward(ctx, a, part):
        return part

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(
            "linalg.svd: the singular vectors past min(m, n) of a full SVD (full_matrices=True) have no "
            "defined gradient; compute the SVD with full_matrices=False to differentiate it"
        )


def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> SVDResult:  # noqa: N803
    """U, S, Vh with A = U diag(S) Vh, S descending. The vectors' gradient needs distinct singular
    values (inf or NaN otherwise, as PyTorch); with full_matrices and a non-square A, the extra
    vectors have no gradient (backward through them raises)."""
    A = matrix("linalg.svd", A, square=False)  # noqa: N806
    with _lapack.one_factorization():
        u = _on_host("linalg.svd", A, ops.SvdU.apply)
        s = _on_host("linalg.svd", A, ops.SvdValues.apply)
        vh = _on_host("linalg.svd", A, ops.SvdVh.apply)
    m, n = A.shape[-2], A.shape[-1]
    if full_matrices and m != n:
        full_u, _, full_vh = np.linalg.svd(host_batches(A), full_matrices=True)
        if m > n:
            extra = A.new_tensor(full_u[..., n:].reshape(A.shape[:-2] + (m, m - n)))
            u = cat([u, _FullComplement.apply(A, extra) if A.requires_grad else extra], -1)
        else:
            extra = A.new_tensor(full_vh[..., m:, :].reshape(A.shape[:-2] + (n - m, n)))
            vh = cat([vh, _FullComplement.apply(A, extra) if A.requires_grad else extra], -2)
    return SVDResult(u, s, vh)


def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:  # noqa: N803
    """The singular values of A, descending."""
    A = matrix("linalg.svdvals", A, square=False)  # noqa: N806
    return _on_host("linalg.svdvals", A, ops.SvdValues.apply)


def qr(A: Tensor, mode: str = "reduced") -> QRResult:  # noqa: N803
    """Q with orthonormal columns and upper-triangular R, A = Q R. mode 'reduced', 'complete' or 'r'."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    A = matrix("linalg.qr", A, square=False)  # noqa: N806
    m, n = A.shape[-2], A.shape[-1]
    if m < n and A.requires_grad and is_grad_enabled():
        # A = [X Y] with X square: Q R_X = X, and R = [R_X, Q^T Y], so the gradient flows through
        # the square factorization and a product (PyTorch's rule for wide A, by composition).
        q, r_square = qr(A[..., :m])
        r = cat([r_square, q.mT @ A[..., m:]], -1)
        return QRResult(A.new_zeros((0,)) if mode == "r" else q, r)
    with _lapack.one_factorization():
        r = _on_host("linalg.qr", A, ops.QrR.apply)
        if mode == "r":
            return QRResult(A.new_zeros((0,)), r)
        q = _on_host("linalg.qr", A, ops.QrQ.apply)
    if mode == "complete" and m > n:
        full_q = np.linalg.qr(host_batches(A), mode="complete")[0]
        extra = A.new_tensor(full_q[..., n:].reshape(A.shape[:-2] + (m, m - n)))
        q = cat([q, _FullComplement.apply(A, extra) if A.requires_grad else extra], -1)
        r = cat([r, r.new_zeros(A.shape[:-2] + (m - n, n))], -2)
    return QRResult(q, r)


def det(A: Tensor) -> Tensor:  # noqa: N803
    """The determinant; differentiable at singular A too (through the cofactors)."""
    A = matrix("linalg.det", A)  # noqa: N806
    return ops.Det.apply(A)  # a CUDA tensor's by the batched LU kernel on its device


def slogdet(A: Tensor) -> SlogdetResult:  # noqa: N803
    """(sign, log|det|): sign 0 and logabsdet -inf for a singular matrix."""
    A = matrix("linalg.slogdet", A)  # noqa: N806
    with _lapack.one_factorization():  # on the host, the sign comes from the LU that log|det| computed
        logabs = ops.LogAbsDet.apply(A)  # a CUDA tensor's by the batched LU kernel on its device
        if A.device.type == "cpu":
            signs = _lapack.slogdet(A._data)[0]
        else:
            signs = backend_for(A._data).to_host(ops.device_slogdet(A._data)[0])
    return SlogdetResult(A.new_tensor(np.reshape(signs, -1).reshape(A.shape[:-2])), logabs)


def eig(A: Tensor) -> EigResult:  # noqa: N803
    """Eigenvalues and eigenvectors of a general square matrix, when they are real.

    numdiff has no complex dtype: where an eigenvalue is complex this raises, naming it (for a
    symmetric matrix use eigh). No gradient: it needs complex arithmetic too.
    """
    A = _eig_input("linalg.eig", A)  # noqa: N806
    values, vectors = np.linalg.eig(host_batches(A))
    _real_only("linalg.eig", values, A)
    shape = A.shape[:-2]
    return EigResult(A.new_tensor(values.real.reshape(shape + (A.shape[-1],))),
                     A.new_tensor(vectors.real.reshape(A.shape)))


def eigvals(A: Tensor) -> Tensor:  # noqa: N803
    """Eigenvalues of a general square matrix, when they are real (see eig)."""
    A = _eig_input("linalg.eigvals", A)  # noqa: N806
    values = np.linalg.eigvals(host_batches(A))
    _real_only("linalg.eigvals", values, A)
    return A.new_tensor(values.real.reshape(A.shape[:-2] + (A.shape[-1],)))


def _eig_input(op: str, A: Tensor) -> Tensor:  # noqa: N803
    A = matrix(op, A)  # noqa: N806
    if A.requires_grad and is_grad_enabled():
        raise RuntimeError(
            f"{op}: numdiff has no complex dtype, so the gradient of a general eigendecomposition is not "
            "available; for a symmetric matrix use linalg.eigh, or pass A.detach()"
        )
    return A


def _real_only(op: str, values: np.ndarray, A: Tensor) -> None:  # noqa: N803
    complex_at = np.flatnonzero((values.imag != 0).any(axis=-1))
    if complex_at.size:
        index = int(complex_at[0])
        example = values[index][values[index].imag != 0][0]
        raise TypeError(
            f"{op}: {batch_entry(index, A.shape[:-2])}the matrix has complex eigenvalues (e.g. {example:.6g}), "
            "and numdiff has no complex dtype; for a symmetric matrix use linalg.eigh"
        )


def lu_factor(A: Tensor, *, pivot: bool = True) -> LUFactorResult:  # noqa: N803
    """(LU, pivots): L (unit diagonal, below) and U packed in one matrix, and LAPACK's 1-based int32
    pivots. Raises LinAlgError naming an exactly singular entry (use lu_factor_ex to get info)."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)  # noqa: N806
    failing = np.flatnonzero(info.numpy().reshape(-1))
    if failing.size:
        index = int(failing[0])
        raise LinAlgError(
            f"linalg.lu_factor: {batch_entry(index, A.shape[:-2])}The factorization could not be completed "
            f"because the input is singular: U[{int(info.numpy().reshape(-1)[index]) - 1}, "
            f"{int(info.numpy().reshape(-1)[index]) - 1}] is zero."
        )
    return LUFactorResult(LU, pivots)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> LUFactorExResult:  # noqa: N803
    """(LU, pivots, info) of A = P L U; info is k > 0 where U[k-1, k-1] is exactly zero."""
    if not pivot:
        raise NotImplementedError("linalg.lu_factor: pivot=False is only supported on CUDA in PyTorch too")
    L, U, perm = _lu_parts(A, "linalg.lu_factor")  # noqa: N806
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    packed = L[..., :, :k].tril(-1) if m >= n else L.tril(-1)
    LU = cat([packed, packed.new_zeros(A.shape[:-2] + (m, n - k))], -1) if n > k else packed  # noqa: N806
    LU = LU + (U if m <= n else cat([U, U.new_zeros(A.shape[:-2] + (m - k, n))], -2))  # noqa: N806
    diag = np.abs(np.diagonal(host_batches(U), axis1=-2, axis2=-1))
    info = np.array([int(np.flatnonzero(d == 0)[0]) + 1 if (d == 0).any() else 0 for d in diag], dtype=np.int32)
    info = integer_tensor(info.reshape(A.shape[:-2]), A)
    if check_errors and bool((info.numpy() != 0).any()):
        return LUFactorExResult(*lu_factor(A), info)
    return LUFactorExResult(LU, integer_tensor(_pivots(perm).reshape(A.shape[:-2] + (k,)), A), info)


def _pivots(perm: np.ndarray) -> np.ndarray:
    """LAPACK's sequential row swaps (1-based) that reorder rows as `perm` (rows of P^T A)."""
    out = []
    for order in perm:
        rows = list(range(len(order)))
        swaps = []
        for i in range(min(len(order), order.shape[-1])):
            j = rows.index(order[i])
            swaps.append(j + 1)
            rows[i], rows[j] = rows[j], rows[i]
        out.append(swaps)
    return np.asarray(out, dtype=np.int32)


def _lu_parts(A: Tensor, op: str) -> tuple[Tensor, Tensor, np.ndarray]:  # noqa: N803
    A = matrix(op, A, square=False)  # noqa: N806
    batches = host_batches(A)
    m, n = A.shape[-2], A.shape[-1]
    if not batches.size:  # empty matrices or an empty batch: empty factors, as in PyTorch
        k = min(m, n)
        L = _LUPart.apply(A, A.new_tensor(np.eye(m, k, dtype=A.dtype.numpy) * np.ones(A.shape[:-2] + (1, 1))), "L")  # noqa: N806
        U = _LUPart.apply(A, A.new_zeros(A.shape[:-2] + (k, n)), "U")  # noqa: N806
        return L, U, np.broadcast_to(np.arange(m), (len(batches), m))
    perms, lows, ups = [], [], []
    for m in batches:
        p, low, up = scipy_linalg.lu(m, check_finite=False)
        perms.append(np.argmax(p, axis=0))  # row i of P^T A is row perm[i] of A
        lows.append(low)
        ups.append(up)
    shape = A.shape[:-2]
    L = _LUPart.apply(A, A.new_tensor(np.asarray(lows).reshape(shape + lows[0].shape)) if lows else A, "L")  # noqa: N806
    U = _LUPart.apply(A, A.new_tensor(np.asarray(ups).reshape(shape + ups[0].shape)) if ups else A, "U")  # noqa: N806
    return L, U, np.asarray(perms)


class _LUPart(Function):
    """L or U of A = P L U, with PyTorch's gradient (real case; see _lu_gradient), linear in the
    part's own gradient."""

    @staticmethod
    def forward(ctx, a, part, which):
        ctx.which = which
        ctx.save_for_backward(a, part)
        return part

    @staticmethod
    def backward(ctx, grad):
        a, part = ctx.saved_tensors
        L, U, perm = _lu_parts(a.detach(), "linalg.lu")  # noqa: N806
        grad_l = grad if ctx.which == "L" else L.new_zeros(L.shape)
        grad_u = grad if ctx.which == "U" else U.new_zeros(U.shape)
        p = np.zeros(perm.shape + perm.shape[-1:])
        np.put_along_axis(p, perm[..., None, :], 1.0, axis=-2)
        p = grad.new_tensor(p.reshape(a.shape[:-2] + p.shape[-2:]))
        return p @ _lu_gradient(L, U, grad_l, grad_u), None, None


def _lu_gradient(L: Tensor, U: Tensor, grad_l: Tensor, grad_u: Tensor) -> Tensor:  # noqa: N803
    """The gradient for P^T A = L U (L m x k unit lower, U k x n upper, k = min(m, n)).

    Square: L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T. Wide (m < n, U = [U1 U2]): the square
    rule on (L, U1) with gL's part reduced by gU2 U2^T, and gU2 passed through L^-T. Tall (m > n,
    L = [L1; L2]): the transpose of that, with gL2 passed through U^-T.
    """
    m, n = L.shape[-2], U.shape[-1]
    if m <= n:
        u1, grad_u1, grad_u2 = U[..., :m], grad_u[..., :m], grad_u[..., m:]
        lower = L.mT @ grad_l
        if m < n:
            lower = lower - grad_u2 @ U[..., m:].mT
        inner = lower.tril(-1) + (grad_u1 @ u1.mT).triu()
        right = SolveTriangular.apply(u1.mT, inner, upper=False, left=False, unitriangular=False)
        if m < n:
            right = cat([right, grad_u2], -1)
        return SolveTriangular.apply(L.mT, right, upper=True, left=True, unitriangular=True)
    l1, grad_l1, grad_l2 = L[..., :n, :], grad_l[..., :n, :], grad_l[..., n:, :]
    upper = grad_u @ U.mT - L[..., n:, :].mT @ grad_l2
    inner = (l1.mT @ grad_l1).tril(-1) + upper.triu()
    left = SolveTriangular.apply(l1.mT, inner, upper=True, left=True, unitriangular=True)
    return SolveTriangular.apply(U.mT, cat([left, grad_l2], -2), upper=False, left=False, unitriangular=False)


def lu(A: Tensor, *, pivot: bool = True) -> LUResult:  # noqa: N803
    """P, L, U with A = P L U, L unit lower triangular, U upper triangular."""
    if not pivot:
        raise NotImplementedError("linalg.lu: pivot=False is only supported on CUDA in PyTorch too")
    L, U, perm = _lu_parts(A, "linalg.lu")  # noqa: N806
    p = np.zeros(perm.shape + perm.shape[-1:], dtype=A.dtype.numpy)
    np.put_along_axis(p, perm[..., None, :], 1.0, axis=-2)
    return LUResult(A.new_tensor(p.reshape(A.shape[:-2] + (A.shape[-2],) * 2)), L, U)
