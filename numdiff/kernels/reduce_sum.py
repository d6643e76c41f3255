"""Sums over several axes of a contiguous array in one pass (CPU, Numba): the gradient of a broadcast.

``np.sum(g, axis=dims, keepdims=True)`` is fast for one block of trailing or leading axes, but an
axis pattern that interleaves summed and kept axes walks the array once per summed axis through
strided inner loops: nearest Upsample(2)'s gradient, ``g`` of shape (N, C, H, 2, W, 2) summed over
axes 3 and 5, took 5.2 ms on 4x32x32x32 where two slice-adds take 0.2 ms. Every broadcast's
gradient (Expand's backward) and every ``Tensor.sum`` over several axes comes through here.

- ``sum_dims(x, dims, out)``: ``out[...] = x.sum(axis=dims, keepdims=True)``. The launcher
  collapses neighbouring axes that are all summed or all kept, so ``x`` becomes pairs
  ``(k_0, r_0), ..., (k_m, r_m)`` (kept size, summed size; the first k or the last r may be 1).
  Loop nest: output rows ``t`` (every combination of the outer kept sizes k_0..k_{m-1}) split into
  column blocks of the last kept size k_m, in parallel from SUM_GRAIN_ELEMENTS values
  (numdiff.kernels._parallel); per row, every combination of the outer
  summed sizes r_0..r_{m-1}; inside, the last pair, contiguous in x: ``out[t, d] += sum_e x[...,
  d, e]``. Each (row, block) is written by one thread, so no two threads write one element.
  The innermost sum over r_m accumulates in float64; the sum over the outer summed axes adds
  into ``out`` in its dtype, as NumPy does for summed axes that are not innermost. Extra memory:
  none. A float32/float64 C-contiguous ``x`` and ``out`` whose innermost summed run r_m is
  2..SHORT_INNER_SUM only; any other input (a kept innermost axis, a run over the cap) goes to np.sum.

The CUDA twin is numdiff.cuda's reduction kernel (numdiff.cuda._functions.sum_dims).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._checks import FLOAT_DTYPES
from numdiff.kernels._parallel import SUM_GRAIN_ELEMENTS, serial_and_parallel

__all__ = ["SHORT_INNER_SUM", "collapse_axes", "sum_dims"]

SHORT_INNER_SUM = 1 << 24
"""The longest innermost summed run this kernel takes; longer runs go to np.sum. Since its run loop
indexes unsigned (and vectorises) it beats np.sum at every run length measured (one thread, float32,
thread CPU time, load ~10: (16, 96, 8, 8) over (2, 3) 36 us against 71, a run of 256 54 / 116,
(64, 32, 16, 16) over (0, 2, 3) 74 / 158, (4, 2^18) over axis 1 116 / 209); the cap only bounds one
float64 run's length."""


def _sum_pairs(x, out, pairs, blocks):
    """x, out: flat C-contiguous arrays; pairs: int64[4 (m + 1)], the pairs' kept sizes, summed
    sizes, and the strides of each pair's kept and summed index in x's elements, one after the
    other (one flat array, not four: each array argument costs the launcher a conversion and Numba
    a type check); blocks: column blocks per row."""
    count = pairs.shape[0] // 4
    kept = pairs[:count]
    summed = pairs[count : 2 * count]
    x_kept_strides = pairs[2 * count : 3 * count]
    x_summed_strides = pairs[3 * count :]
    m = count - 1
    width = kept[m]
    inner = summed[m]
    rows = 1
    for i in range(m):
        rows *= kept[i]
    combos = 1
    for i in range(m):
        combos *= summed[i]
    block = (width + blocks - 1) // blocks
    for job in prange(rows * blocks):
        t = job // blocks
        d0 = (job % blocks) * block
        d1 = min(d0 + block, width)
        base = 0
        rest = t
        for i in range(m - 1, -1, -1):
            base += (rest % kept[i]) * x_kept_strides[i]
            rest //= kept[i]
        o = t * width
        for u in range(combos):
            offset = base
            rest = u
            for i in range(m - 1, -1, -1):
                offset += (rest % summed[i]) * x_summed_strides[i]
                rest //= summed[i]
            for d in range(d0, d1):
                # An unsigned index: LLVM cannot prove a signed one non-negative here (d starts at
                # the job's block), and Numba's wraparound select per load kept the run from
                # vectorising ((1536, 64) over axis 1: 51 us signed, 10 unsigned, one thread).
                start = np.uint64(offset + d * inner)
                total = 0.0
                for e in range(np.uint64(inner)):
                    total += x[start + e]
                if u == 0:
                    out[o + d] = total
                else:
                    out[o + d] += total


# reassoc lets the float64 inner sum run in vector lanes (one add chain is latency bound); NaN
# and infinity still propagate.
_SUM_PAIRS = serial_and_parallel(_sum_pairs, fastmath={"reassoc"})


def collapse_axes(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[list[int], list[int]]:
    """The (kept, summed) size pairs of `shape` summed over `dims`, neighbouring axes of one kind
    merged and size-1 axes dropped; the first kept or the last summed size may be 1.

    >>> collapse_axes((4, 8, 2, 16, 2), (2, 4))
    ([32, 16], [2, 2])
    >>> collapse_axes((5, 3, 7), (0, 2))
    ([1, 3], [5, 7])
    """
    kept: list[int] = []
    summed: list[int] = []
    for axis, size in enumerate(shape):
        if size == 1:
            continue
        if axis in dims:
            if not kept:
                kept.append(1)
                summed.append(size)
            else:
                summed[-1] *= size
        elif kept and summed[-1] == 1:
            kept[-1] *= size
        else:
            kept.append(size)
            summed.append(1)
    return kept or [1], summed or [1]


def sum_dims(x: np.ndarray, dims: tuple[int, ...], out: np.ndarray) -> None:
    """``out[...] = x.sum(axis=dims, keepdims=True)`` in one pass over `x` (module docstring).

    Called on every broadcast's gradient and every sum over some axes, mostly of small arrays: the
    launcher is written for its Python cost (the kernel on a 4x8 array takes 0.5 us; the launcher
    took 6 until its checks, sizes and strides were one pass and one int64 array).

    >>> out = np.empty((2, 1, 3, 1)); sum_dims(np.ones((2, 4, 3, 5)), (1, 3), out); out.ravel()
    array([20., 20., 20., 20., 20., 20.])
    """
    shape = x.shape
    kept_shape = tuple([1 if axis in dims else size for axis, size in enumerate(shape)])
    if out.shape != kept_shape:
        raise ValueError(
            f"sum_dims: out has shape {tuple(out.shape)}, expected {kept_shape} (x {tuple(shape)} "
            f"summed over axes {tuple(dims)} with the summed axes kept as size 1)"
        )
    dims = tuple(dims)
    last = len(shape) - 1
    while last > 0 and shape[last] == 1:
        last -= 1
    if (
        last not in dims  # the innermost axis kept (a bias gradient's sum over rows): NumPy's own case
        or x.dtype not in FLOAT_DTYPES
        or out.dtype != x.dtype
        or not x.flags.c_contiguous
        or not out.flags.c_contiguous
        or x.size == 0
    ):
        np.add.reduce(x, axis=dims, keepdims=True, out=out)  # np.sum's reduction, without its wrapper
        return
    kept, summed = collapse_axes(shape, dims)
    if not 1 < summed[-1] <= SHORT_INNER_SUM:
        np.add.reduce(x, axis=dims, keepdims=True, out=out)
        return
    # Strides from the innermost pair outwards: a pair's summed index steps over whole runs of
    # its kept index's inner neighbours, its kept index over the summed run inside it.
    count = len(kept)
    kept_strides = [0] * count
    summed_strides = [0] * count
    stride = 1
    for i in range(count - 1, -1, -1):
        summed_strides[i] = stride
        kept_strides[i] = stride * summed[i]
        stride *= kept[i] * summed[i]
    rows = out.size // kept[-1]
    kernel, parts = _SUM_PAIRS.pick(x.size, SUM_GRAIN_ELEMENTS)
    # Rows split over the threads; with fewer rows than threads, each row's columns too.
    blocks = 1 if rows >= 4 * parts else max(1, min(kept[-1] // 256, -(-4 * parts // rows)))
    pairs = np.array(kept + summed + kept_strides + summed_strides, np.int64)
    kernel(x.reshape(-1), out.reshape(-1), pairs, blocks)
