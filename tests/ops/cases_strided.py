"""Cases for as_strided: transposing, sliding-window (overlapping) and offset views of a contiguous input."""

from __future__ import annotations

import numpy as np

import numdiff
from tests.ops.op_cases import OpCase, args, normal


def _strided(shape, stride, offset=0):
    def reference(x: np.ndarray) -> np.ndarray:
        flat = np.ascontiguousarray(x).reshape(-1)
        return np.lib.stride_tricks.as_strided(flat[offset:], shape, tuple(s * flat.itemsize for s in stride)).copy()

    return reference


CASES = [
    OpCase("as_strided", "transpose", args(normal(3, 4)), lambda x: x.as_strided((4, 3), (1, 4)), _strided((4, 3), (1, 4))),
    OpCase("as_strided", "windows-overlap", args(normal(10)), lambda x: numdiff.as_strided(x, (4, 3), (2, 1)),
           _strided((4, 3), (2, 1))),
    OpCase("as_strided", "offset-3d", args(normal(2, 3, 4)), lambda x: x.as_strided((2, 2, 2), (12, 1, 4), 1),
           _strided((2, 2, 2), (12, 1, 4), 1)),
]
