"""Optimizer steps over the rows a sparse gradient names (CPU, Numba): SparseAdam and sparse
Adagrad as one pass over those rows instead of NumPy's gathers, temporaries and scatters.

Both take the coalesced gradient: `rows` (n,) int64, distinct, and `values` (n, width), and
update C-contiguous (table rows, width) arrays in place. Loop nest: rows i (serial; distinct
rows, so the order does not change a result), then the row's columns j (contiguous). Each
element's arithmetic is PyTorch's, in its order and in the arrays' dtype (float32 stays
float32: the scalars come in as that dtype), so results match torch.optim's sparse paths.
Extra memory: none (the NumPy form made six (n, width) temporaries; word2vec step with
SparseAdam, vocab 10000, dim 128: see optim/_sparse_steps.py).

- ``sparse_adam_rows(param, exp_avg, exp_avg_sq, rows, values, one_minus_beta1, one_minus_beta2,
  eps, neg_step_size)``: ``du = (g - m) * (1 - b1)``, ``m += du``; ``dv = (g*g - v) * (1 - b2)``,
  ``v += dv``; ``p += neg_step_size * ((du + m_old) / (sqrt(dv + v_old) + eps))``.
- ``adagrad_rows(param, state_sum, rows, values, eps, neg_clr)``: ``s += g*g``,
  ``p += (g / (sqrt(s) + eps)) * neg_clr``.
"""

from __future__ import annotations

import numpy as np

from numdiff.kernels._checks import check_float_arrays, check_index_array
from numdiff.kernels._self_healing_cache import njit

__all__ = ["adagrad_rows", "sparse_adam_rows"]


@njit(cache=True, nogil=True)
def _sparse_adam_rows(param, exp_avg, exp_avg_sq, rows, values, one_minus_beta1, one_minus_beta2, eps, neg_step_size):
    width = param.shape[1]
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(width):
            g = values[i, j]
            old_m = exp_avg[r, j]
            old_v = exp_avg_sq[r, j]
            du = (g - old_m) * one_minus_beta1
            dv = (g * g - old_v) * one_minus_beta2
            exp_avg[r, j] = old_m + du
            exp_avg_sq[r, j] = old_v + dv
            param[r, j] += neg_step_size * ((du + old_m) / (np.sqrt(dv + old_v) + eps))


@njit(cache=True, nogil=True)
def _adagrad_rows(param, state_sum, rows, values, eps, neg_clr):
    width = param.shape[1]
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(width):
            g = values[i, j]
            s = state_sum[r, j] + g * g
            state_sum[r, j] = s
            param[r, j] += (g / (np.sqrt(s) + eps)) * neg_clr


def _check(op: str, tables: dict, rows: np.ndarray, values: np.ndarray) -> None:
    check_float_arrays(op, values=values, **tables)  # float32/float64, one dtype, C-contiguous
    check_index_array(op, "rows", rows)
    shapes = {name: t.shape for name, t in tables.items()}
    first = next(iter(tables.values()))
    if any(t.ndim != 2 or t.shape != first.shape for t in tables.values()) or (
        rows.ndim != 1 or values.shape != (rows.shape[0], first.shape[1])
    ):
        raise ValueError(f"{op}: tables must be 2-D of one shape, rows 1-D and values (len(rows), width); "
                         f"got tables {shapes}, rows {rows.shape}, values {values.shape}")
    if rows.size and (rows.min() < 0 or rows.max() >= first.shape[0]):
        raise IndexError(f"{op}: rows must lie in [0, {first.shape[0] - 1}], got values in [{rows.min()}, {rows.max()}]")


def sparse_adam_rows(
    param: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray, rows: np.ndarray, values: np.ndarray,
    beta1: float, beta2: float, eps: float, step_size: float,
) -> None:
    """SparseAdam's update of `rows` of `param` and its two moments, in place (module docstring).

    >>> p, m, v = np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((3, 2))
    >>> sparse_adam_rows(p, m, v, np.array([1]), np.ones((1, 2)), 0.9, 0.999, 1e-8, 0.1); m[1]
    array([0.1, 0.1])
    """
    _check("sparse_adam_rows", {"param": param, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}, rows, values)
    kind = param.dtype.type
    _sparse_adam_rows(param, exp_avg, exp_avg_sq, rows, values, kind(1 - beta1), kind(1 - beta2), kind(eps), kind(-step_size))


def adagrad_rows(param: np.ndarray, state_sum: np.ndarray, rows: np.ndarray, values: np.ndarray, eps: float, clr: float) -> None:
    """Sparse Adagrad's update of `rows` of `param` and its sum of squares, in place.

    >>> p, s = np.zeros((3, 2)), np.zeros((3, 2))
    >>> adagrad_rows(p, s, np.array([2]), np.full((1, 2), 2.0), 1e-10, 0.5); s[2]
    array([4., 4.])
    """
    _check("adagrad_rows", {"param": param, "state_sum": state_sum}, rows, values)
    kind = param.dtype.type
    _adagrad_rows(param, state_sum, rows, values, kind(eps), kind(-clr))
