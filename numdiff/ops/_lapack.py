"""Which LAPACK runs a factorization: SciPy's for large or single matrices, NumPy's for small batches.

NumPy's linalg loops over a batch in C, which wins for many small matrices; SciPy's LAPACK is the
one numdiff pins to one thread (numdiff.kernels._blas.prepare_blas), next to its own thread
pool, and the faster build for one large matrix (here 512x512 Cholesky: 22 ms against NumPy's 84
at one thread; with two OpenBLAS pools spinning on a loaded machine, NumPy's took 1.3 s).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff._lazy import lazy_module

scipy_linalg = lazy_module("scipy.linalg")
_blas = lazy_module("numdiff.kernels._blas")

_SMALL = 32  # matrices of at most this order, in a batch, go through NumPy's batched loop


def per_matrix(a: np.ndarray, scipy_fn: Callable[[np.ndarray], Any], numpy_fn: Callable[[np.ndarray], Any]) -> Any:
    """``numpy_fn(a)`` for a batch of small matrices, else ``scipy_fn`` on each matrix, restacked."""
    if a.ndim > 2 and a.shape[-1] <= _SMALL and a.shape[-2] <= _SMALL and a.size:
        return numpy_fn(a)
    _blas.prepare_blas()
    flat = a.reshape((-1,) + a.shape[-2:])
    results = [scipy_fn(m) for m in flat]
    batch = a.shape[:-2]
    if isinstance(results[0], tuple):
        return tuple(np.stack([r[i] for r in results]).reshape(batch + results[0][i].shape)
                     for i in range(len(results[0])))
    return np.stack(results).reshape(batch + results[0].shape)


def cholesky(a: np.ndarray) -> np.ndarray:
    return per_matrix(a, lambda m: scipy_linalg.cholesky(m, lower=True, check_finite=False), np.linalg.cholesky)


def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.ndim == 2 and b.ndim == 2:
        _blas.prepare_blas()
        with warnings.catch_warnings():  # an ill-conditioned A is solved as LAPACK solves it, as torch
            warnings.simplefilter("ignore", scipy_linalg.LinAlgWarning)
            return scipy_linalg.solve(a, b, check_finite=False)
    return np.linalg.solve(a, b)


def inv(a: np.ndarray) -> np.ndarray:
    return per_matrix(a, lambda m: scipy_linalg.inv(m, check_finite=False), np.linalg.inv)


def eigh(a: np.ndarray, upper: bool) -> tuple[np.ndarray, np.ndarray]:
    return per_matrix(a, lambda m: scipy_linalg.eigh(m, lower=not upper, check_finite=False, driver="evd"),
                      lambda x: np.linalg.eigh(x, UPLO="U" if upper else "L"))


def svd(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return per_matrix(a, lambda m: scipy_linalg.svd(m, full_matrices=False, check_finite=False),
                      lambda x: np.linalg.svd(x, full_matrices=False))


def qr(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return per_matrix(a, lambda m: scipy_linalg.qr(m, mode="economic", check_finite=False),
                      lambda x: np.linalg.qr(x, mode="reduced"))


def slogdet(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    def one(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lu, piv = scipy_linalg.lu_factor(m, check_finite=False)
        diag = np.diagonal(lu)
        swaps = np.count_nonzero(piv != np.arange(len(piv)))
        sign = (-1.0) ** swaps * np.prod(np.sign(diag))
        with np.errstate(divide="ignore"):
            return np.asarray(sign), np.asarray(np.sum(np.log(np.abs(diag))))

    return per_matrix(a, one, np.linalg.slogdet)
