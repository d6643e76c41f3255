"""The maximum of each bag of rows on the host (CPU, Numba): embedding_bag's max mode.

- ``first_max_rows(values, segment, keep, bags)``: for each bag b and column j, the first row t
  with segment[t] == b and keep[t] whose values[t, j] is the largest of the bag's kept rows in
  column j (a NaN counts as the largest: the first NaN wins, as max propagates it), and whether
  the bag has a kept row at all. Loop nest: rows t in order (serial: a later row replaces an
  earlier one only when strictly larger, which keeps the first of ties), then the columns j
  (contiguous). Extra memory: the (bags, dim) positions and (bags,) flags returned.
  The NumPy form it replaces (np.maximum.at, a comparison, np.minimum.at) took 2.7 ms on 64
  bags of 1400 rows of 64, PyTorch's embedding_bag max forward 0.12 ms.
"""

from __future__ import annotations

import numpy as np

from numdiff.kernels._self_healing_cache import njit

__all__ = ["first_max_rows"]


@njit(cache=True, nogil=True)
def _first_max_rows(values, segment, keep, positions, found):
    rows, dim = values.shape
    for t in range(rows):
        if not keep[t]:
            continue
        b = segment[t]
        if not found[b]:
            found[b] = True
            for j in range(dim):
                positions[b, j] = t
            continue
        for j in range(dim):
            best = values[positions[b, j], j]
            v = values[t, j]
            if v > best or (v != v and best == best):
                positions[b, j] = t


def first_max_rows(values: np.ndarray, segment: np.ndarray, keep: np.ndarray, bags: int) -> tuple[np.ndarray, np.ndarray]:
    """((bags, dim) int64 rows of `values` holding each bag's maximum per column (0 for a bag with
    no kept row), (bags,) bool: whether the bag has one).

    >>> first_max_rows(np.array([[1.0], [3.0], [2.0]]), np.array([0, 0, 1]), np.ones(3, bool), 2)
    (array([[1],
           [2]]), array([ True,  True]))
    """
    if values.ndim != 2 or segment.shape != (values.shape[0],) or keep.shape != segment.shape:
        raise ValueError(
            f"first_max_rows: values must be 2-D and segment, keep 1-D of its length; got values {values.shape}, "
            f"segment {segment.shape}, keep {keep.shape}"
        )
    if segment.size and (segment.min() < 0 or segment.max() >= bags):
        raise IndexError(f"first_max_rows: segment must lie in [0, {bags - 1}], got values in [{segment.min()}, {segment.max()}]")
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)  # exact for every narrower float: the order is kept
    positions = np.zeros((bags, values.shape[1]), dtype=np.int64)
    found = np.zeros(bags, dtype=np.bool_)
    _first_max_rows(
        np.ascontiguousarray(values), np.ascontiguousarray(segment, dtype=np.int64),
        np.ascontiguousarray(keep, dtype=np.bool_), positions, found,
    )
    return positions, found
