"""numdiff's CUDA kernels: plain @cuda.jit functions over device buffers, each with one launcher.

Every array argument is a 1-D device buffer plus a `meta` int64 vector ``[offset, stride_0, ...]``
in elements, read against a `shape` vector, so views (transposes, slices, broadcasts with stride 0,
flips with negative strides) reach the kernels without a copy.
"""
