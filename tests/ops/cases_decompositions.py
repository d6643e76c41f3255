"""Op cases for numdiff.linalg's factorizations and solvers (float64, gradcheck and gradgradcheck).

Inputs are built so the maths is well defined: symmetric positive-definite matrices for cholesky,
distinct eigenvalues and singular values for the vector gradients, triangles with a heavy diagonal
for triangular solves. Eigen- and singular vectors enter squared, so the sign LAPACK picks for
each vector does not matter.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

import numdiff
from tests.ops.op_cases import OpCase

linalg = numdiff.linalg


def _spd(x):
    n = x.shape[-1]
    return x @ x.mT + n * numdiff.eye(n, dtype=x.dtype, device=x.device)


def _spd_np(x):
    return x @ np.swapaxes(x, -1, -2) + x.shape[-1] * np.eye(x.shape[-1])


def _sym(x):
    return x + x.mT


def _sym_np(x):
    return x + np.swapaxes(x, -1, -2)


def _lower(x):
    return x.tril() + 3 * numdiff.eye(x.shape[-1], dtype=x.dtype, device=x.device)


def _lower_np(x):
    return np.tril(x) + 3 * np.eye(x.shape[-1])


def _sq(v):
    return v * v


_SOLVE_TOL = {"atol": 1e-6, "rtol": 1e-5}

CASES = [
    OpCase("linalg_cholesky", "batch 2 of 3x3", lambda rng: (rng.standard_normal((2, 3, 3)),),
           lambda x: linalg.cholesky(_spd(x)), lambda x: np.linalg.cholesky(_spd_np(x)), forward_rtol=1e-10),
    OpCase("solve_triangular", "lower, left", lambda rng: (rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 2))),
           lambda a, b: linalg.solve_triangular(_lower(a), b, upper=False),
           lambda a, b: np.linalg.solve(_lower_np(a), b), forward_rtol=1e-10),
    OpCase("solve_triangular", "upper, right, unit", lambda rng: (rng.standard_normal((3, 3)), rng.standard_normal((2, 3))),
           lambda a, b: linalg.solve_triangular(_lower(a).mT, b, upper=True, left=False, unitriangular=True),
           lambda a, b: b @ np.linalg.inv(np.triu(_lower_np(a).T, 1) + np.eye(3)), forward_rtol=1e-10),
    OpCase("linalg_solve", "batch, matrix rhs", lambda rng: (rng.standard_normal((2, 3, 3)) + 3 * np.eye(3),
                                                             rng.standard_normal((2, 3, 2))),
           lambda a, b: linalg.solve(a, b), lambda a, b: np.linalg.solve(a, b), forward_rtol=1e-10),
    OpCase("linalg_inv", "batch", lambda rng: (rng.standard_normal((2, 3, 3)) + 3 * np.eye(3),),
           lambda a: linalg.inv(a), lambda a: np.linalg.inv(a), forward_rtol=1e-10),
    OpCase("linalg_det", "batch", lambda rng: (rng.standard_normal((2, 3, 3)),),
           lambda a: linalg.det(a), lambda a: np.linalg.det(a), forward_rtol=1e-10),
    OpCase("linalg_det", "singular", lambda rng: (np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]]),),
           lambda a: linalg.det(a), lambda a: np.linalg.det(a), forward_atol=1e-12, second_order=False),
    OpCase("linalg_logabsdet", "batch", lambda rng: (rng.standard_normal((2, 3, 3)) + 3 * np.eye(3),),
           lambda a: linalg.slogdet(a).logabsdet, lambda a: np.linalg.slogdet(a)[1], forward_rtol=1e-10),
    OpCase("linalg_eigvalsh", "batch", lambda rng: (rng.standard_normal((2, 4, 4)),),
           lambda a: linalg.eigvalsh(_sym(a)), lambda a: np.linalg.eigvalsh(_sym_np(a)), forward_rtol=1e-10),
    OpCase("linalg_eigh_vectors", "squared", lambda rng: (rng.standard_normal((3, 3)),),
           lambda a: _sq(linalg.eigh(_sym(a)).eigenvectors), lambda a: np.linalg.eigh(_sym_np(a))[1] ** 2,
           forward_rtol=1e-9, forward_atol=1e-12, tolerances=_SOLVE_TOL),
    OpCase("linalg_svdvals", "tall batch", lambda rng: (rng.standard_normal((2, 4, 3)),),
           lambda a: linalg.svdvals(a), lambda a: np.linalg.svd(a, compute_uv=False), forward_rtol=1e-10),
    OpCase("linalg_svd_u", "tall, squared", lambda rng: (rng.standard_normal((4, 3)),),
           lambda a: _sq(linalg.svd(a, full_matrices=False).U),
           lambda a: np.linalg.svd(a, full_matrices=False)[0] ** 2, forward_rtol=1e-9, forward_atol=1e-12,
           tolerances=_SOLVE_TOL),
    OpCase("linalg_svd_vh", "wide, squared", lambda rng: (rng.standard_normal((3, 4)),),
           lambda a: _sq(linalg.svd(a, full_matrices=False).Vh),
           lambda a: np.linalg.svd(a, full_matrices=False)[2] ** 2, forward_rtol=1e-9, forward_atol=1e-12,
           tolerances=_SOLVE_TOL),
    OpCase("linalg_qr_q", "tall, squared", lambda rng: (rng.standard_normal((4, 3)),),
           lambda a: _sq(linalg.qr(a).Q), lambda a: np.linalg.qr(a)[0] ** 2, forward_rtol=1e-9, forward_atol=1e-12),
    OpCase("linalg_qr_r", "tall batch, squared", lambda rng: (rng.standard_normal((2, 4, 3)),),
           lambda a: _sq(linalg.qr(a).R), lambda a: np.linalg.qr(a)[1] ** 2, forward_rtol=1e-9, forward_atol=1e-12),
    OpCase("linalg_pinv", "tall", lambda rng: (rng.standard_normal((4, 3)),),
           lambda a: linalg.pinv(a), lambda a: np.linalg.pinv(a), forward_rtol=1e-9, forward_atol=1e-12),
    OpCase("linalg_matrix_exp", "batch", lambda rng: (0.5 * rng.standard_normal((2, 3, 3)),),
           lambda a: linalg.matrix_exp(a), lambda a: np.stack([scipy.linalg.expm(m) for m in a]),
           forward_rtol=1e-10),
]  # fmt: skip
