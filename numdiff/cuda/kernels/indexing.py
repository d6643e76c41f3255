"""Indexing kernels: gather and scatter through precomputed offsets, and along one axis.

Repeated targets in a scatter-add accumulate with atomic adds, so every write lands (PyTorch's
index backward and np.add.at semantics); a plain scatter with repeated targets keeps one of them.
"""

from __future__ import annotations

from numba import cuda

from numdiff.cuda.kernels._index import grid_1d, strided_offset


@cuda.jit
def gather_offsets(out, out_meta, src, offsets, shape, n):
    """out[i] = src[offsets[i]] for i in range(n); grid-stride over out's C-order positions."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[strided_offset(i, shape, out_meta)] = src[offsets[i]]


@cuda.jit
def scatter_offsets(dst, offsets, values, values_meta, shape, n):
    """dst[offsets[i]] = values[i] for i in range(n) (values broadcast through values_meta)."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        dst[offsets[i]] = values[strided_offset(i, shape, values_meta)]


@cuda.jit
def scatter_add_offsets(dst, offsets, values, values_meta, shape, n):
    """dst[offsets[i]] += values[i] for i in range(n), atomically (repeated offsets accumulate)."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        cuda.atomic.add(dst, offsets[i], values[strided_offset(i, shape, values_meta)])


@cuda.jit(device=True)
def _along_axis(i, shape, index, index_meta, other_meta, axis, axis_stride):
    """For position i of `shape`: the offset in `other` with coordinate `axis` taken from index."""
    index_offset = index_meta[0]
    other_offset = other_meta[0]
    for d in range(shape.size - 1, -1, -1):
        n = shape[d]
        c = i % n
        i //= n
        index_offset += c * index_meta[d + 1]
        if d != axis:
            other_offset += c * other_meta[d + 1]
    return other_offset + index[index_offset] * axis_stride


@cuda.jit
def take_along_axis(out, src, src_meta, index, index_meta, shape, axis, axis_stride, n):
    """out[i] = src[.., index[i], ..] (coordinate `axis` replaced) for i in range(n = out.size)."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[i] = src[_along_axis(i, shape, index, index_meta, src_meta, axis, axis_stride)]


@cuda.jit
def scatter_add_along_axis(dst, dst_meta, index, index_meta, src, src_meta, shape, axis, axis_stride, n):
    """dst[.., index[i], ..] += src[i] atomically, for i over the C-order positions of `shape`."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        target = _along_axis(i, shape, index, index_meta, dst_meta, axis, axis_stride)
        cuda.atomic.add(dst, target, src[strided_offset(i, shape, src_meta)])


def launch_gather_offsets(out, src, offsets) -> None:
    """out (CudaArray) <- src buffer at `offsets` (contiguous device int64, out.size long)."""
    if out.size:
        blocks, threads = grid_1d(out.size)
        gather_offsets[blocks, threads](
            out._buffer, out.meta(out.shape), src._buffer, offsets, out.shape_vector(), out.size
        )


def launch_scatter_offsets(dst, offsets, values, shape: tuple, accumulate: bool) -> None:
    """dst buffer at `offsets` (of `shape`) <- values broadcast to `shape`; += when accumulate."""
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return
    kernel = scatter_add_offsets if accumulate else scatter_offsets
    blocks, threads = grid_1d(n)
    kernel[blocks, threads](
        dst._buffer, offsets, values._buffer, values.meta(shape), dst.shape_vector(shape), n
    )


def launch_take_along_axis(out, src, index, axis: int) -> None:
    """out (contiguous, index's shape) <- src gathered along `axis` at `index`."""
    if out.size:
        blocks, threads = grid_1d(out.size)
        take_along_axis[blocks, threads](
            out._buffer,
            src._buffer,
            src.meta(src.shape),
            index._buffer,
            index.meta(index.shape),
            index.shape_vector(),
            axis,
            src._strides[axis],
            out.size,
        )


def launch_scatter_add_along_axis(dst, index, src, axis: int) -> None:
    """dst[..., index[i], ...] += src[i] over index's shape (src may be larger: its leading block)."""
    if index.size:
        blocks, threads = grid_1d(index.size)
        scatter_add_along_axis[blocks, threads](
            dst._buffer,
            dst.meta(dst.shape),
            index._buffer,
            index.meta(index.shape),
            src._buffer,
            src.meta(src.shape),
            index.shape_vector(),
            axis,
            dst._strides[axis],
            index.size,
        )
