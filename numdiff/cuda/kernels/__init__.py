"""numdiff's CUDA kernels: plain @cuda.jit functions over device buffers, each with one launcher.

The elementwise, reduction and indexing kernels take every array as a 1-D device buffer plus a
`meta` int64 vector ``[offset, stride_0, ...]`` in elements, read against a `shape` vector, so views
(transposes, slices, broadcasts with stride 0, flips with negative strides) reach them without a
copy. The kernels behind numdiff.kernels' names (matmul, conv, pool) take the CPU kernels'
arguments: matmul reads its operands through their strides, conv and pooling take C-contiguous
arrays (as the CPU kernels do) and see them as flat buffers.
"""
