"""The maximum of each bag of rows on the host (CPU, Numba): embedding_bag's max mode.

- ``first_max_rows(table, ids, segment, keep, bags)``: the entries t are the rows table[ids[t]];
  for each bag b and column j, the table row ids[t] of the first entry t with segment[t] == b
  and keep[t] whose value in column j is the largest of the bag's kept entries (a NaN counts as
  the largest: the first NaN wins, as max propagates it), and whether the bag has a kept entry
  at all. Loop nest: entries t in order (serial: a later entry replaces an earlier one only when
  strictly larger, which keeps the first of ties), then the columns j (contiguous). Extra
  memory: the (bags, dim) rows and (bags,) flags returned; the entries' rows are read in place,
  never gathered.
  The NumPy form it replaces (np.maximum.at, a comparison, np.minimum.at) took 2.7 ms on 64
  bags of 1400 rows of 64, PyTorch's embedding_bag max forward 0.12 ms.
"""

from __future__ import annotations

import numpy as np

from numdiff.kernels._self_healing_cache import njit

__all__ = ["first_max_rows"]


@njit(cache=True, nogil=True)
def _first_max_rows(table, ids, segment, keep, positions, found):
    dim = table.shape[1]
    for t in range(ids.shape[0]):
        if not keep[t]:
            continue
        b = segment[t]
        row = ids[t]
        if not found[b]:
            found[b] = True
            for j in range(dim):
                positions[b, j] = row
            continue
        for j in range(dim):
            best = table[positions[b, j], j]
            v = table[row, j]
            if v > best or (v != v and best == best):
                positions[b, j] = row


def first_max_rows(
    table: np.ndarray, ids: np.ndarray, segment: np.ndarray, keep: np.ndarray, bags: int
) -> tuple[np.ndarray, np.ndarray]:
    """((bags, dim) int64 rows of `table` holding each bag's maximum per column (0 for a bag with
    no kept entry), (bags,) bool: whether the bag has one); entry t is table[ids[t]].

    >>> table = np.array([[1.0], [3.0], [2.0]])
    >>> first_max_rows(table, np.array([0, 1, 2]), np.array([0, 0, 1]), np.ones(3, bool), 2)
    (array([[1],
           [2]]), array([ True,  True]))
    """
    entries = ids.shape[0] if ids.ndim == 1 else -1
    if table.ndim != 2 or entries < 0 or segment.shape != ids.shape or keep.shape != ids.shape:
        raise ValueError(
            f"first_max_rows: table must be 2-D and ids, segment, keep 1-D of one length; got table {table.shape}, "
            f"ids {ids.shape}, segment {segment.shape}, keep {keep.shape}"
        )
    for name, values, size in (("ids", ids, table.shape[0]), ("segment", segment, bags)):
        if values.size and (values.min() < 0 or values.max() >= size):
            raise IndexError(f"first_max_rows: {name} must lie in [0, {size - 1}], got values in [{values.min()}, {values.max()}]")
    if table.dtype not in (np.float32, np.float64):
        table = table.astype(np.float64)  # exact for every narrower float: the order is kept
    positions = np.zeros((bags, table.shape[1]), dtype=np.int64)
    found = np.zeros(bags, dtype=np.bool_)
    _first_max_rows(
        np.ascontiguousarray(table), np.ascontiguousarray(ids, dtype=np.int64), np.ascontiguousarray(segment, dtype=np.int64),
        np.ascontiguousarray(keep, dtype=np.bool_), positions, found,
    )
    return positions, found
