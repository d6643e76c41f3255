"""Where an index's advanced dimensions go in PyTorch's reading of it, where NumPy's differs.

PyTorch applies integer indices first, as selects, so an integer never separates the index
arrays: ``x[0, :, [1, 3]]`` is ``x[0][:, [1, 3]]``, of shape (3, 2) for x of shape (2, 3, 4).
NumPy counts the integer as an advanced index, and a slice between two advanced indices moves
their dimensions to the front: (2, 3), the transpose. This is the only case where the two rules
differ (when NumPy finds the integers and arrays adjacent, so does PyTorch; when the arrays are
apart even without the integers, both put them first). numdiff indexes with NumPy's rule and
then moves the dimensions to PyTorch's place (getitem), or moves a written value's dimensions
the other way before writing (index_put).
"""

from __future__ import annotations

import numpy as np

from numdiff.backend import is_numpy


def torch_position(key: tuple, ndim: int) -> tuple[int, int] | None:
    """(where PyTorch puts the advanced dims, how many result dims the basic entries make) for a
    normalized `key` into `ndim` dims, when NumPy puts them first instead; None otherwise."""
    consumed = sum(
        (k.ndim if is_numpy(k) and k.dtype == np.bool_ else 1) for k in key if k is not None and k is not Ellipsis
    )
    kinds = []
    for k in key:
        if k is Ellipsis:
            # An Ellipsis standing for no dims separates index arrays for NumPy, not for PyTorch.
            kinds.append("basic" if ndim > consumed else "empty")
        elif k is None or isinstance(k, slice):
            kinds.append("basic")
        elif isinstance(k, int) or (getattr(k, "ndim", None) == 0 and k.dtype.kind in "iu"):
            kinds.append("int")  # a 0-d integer tensor selects as an int does in PyTorch
        elif getattr(k, "ndim", None) == 0:
            return None  # a bool scalar (x[True, 0, :, [1]]): PyTorch's reading is its own
        else:
            kinds.append("array")
    arrays = [i for i, kind in enumerate(kinds) if kind == "array"]
    numpy_advanced = [i for i, kind in enumerate(kinds) if kind in ("int", "array")]
    if not arrays:
        return None
    if all(kinds[i] in ("int", "array") for i in range(numpy_advanced[0], numpy_advanced[-1] + 1)):
        return None  # adjacent for NumPy, so for PyTorch too, and both keep them in place
    if "basic" in kinds[arrays[0] : arrays[-1] + 1]:
        return None  # apart for PyTorch too: both put them first
    # the dims no entry names (past the key, where it has no Ellipsis) stay in the result too
    position, rest = 0, (0 if any(k is Ellipsis for k in key) else ndim - consumed)
    for i, k in enumerate(key):
        dims = (ndim - consumed) if k is Ellipsis else int(k is None or isinstance(k, slice))
        rest += dims
        position += dims if i < arrays[0] else 0
    return position, rest
