"""numdiff.linalg: torch.linalg, batched over leading dims, float32 and float64, differentiable.

Factorizations (cholesky, eigh, svd, qr, lu, ldl), solvers (solve, solve_triangular, lstsq,
lu_solve, ldl_solve), inverses (inv, pinv, matrix_exp, matrix_power), determinants and norms.
LAPACK runs through NumPy and SciPy on the host (CUDA tensors are copied there and back); a
batch of small triangular solves runs in one compiled Numba kernel. Gradients follow the
published matrix-calculus results (numdiff/ops/linalg_factor.py and linalg_solve.py list them),
written with differentiable ops so second derivatives work. Bad input (not square, not float,
NaN or inf) raises before LAPACK runs; a singular or indefinite matrix raises `LinAlgError`
naming the batch entry, and the ``_ex`` forms return LAPACK's info instead.
"""

from numdiff.linalg._checks import LinAlgError
from numdiff.linalg._compose import (
    cond,
    matrix_power,
    matrix_rank,
    multi_dot,
    tensorinv,
    tensorsolve,
    vander,
    vecdot,
)
from numdiff.linalg._factor import (
    cholesky,
    cholesky_ex,
    det,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    lu,
    lu_factor,
    lu_factor_ex,
    qr,
    slogdet,
    svd,
    svdvals,
)
from numdiff.linalg._norms import cross, diagonal, matrix_norm, norm, vector_norm
from numdiff.linalg._solve import (
    householder_product,
    inv,
    inv_ex,
    ldl_factor,
    ldl_factor_ex,
    ldl_solve,
    lstsq,
    lu_solve,
    matrix_exp,
    pinv,
    solve,
    solve_ex,
    solve_triangular,
)
from numdiff.ops.linalg import matmul

__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
    "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq",
    "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
    "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular",
    "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm",
]  # fmt: skip


def __dir__() -> list[str]:
    return sorted(__all__)
