"""The matrix products of the im2col convolution cores, as Numba loops instead of BLAS calls.

``product(loops, trans_a, trans_b, a, b, beta, c)`` computes ``c = op(a) @ op(b) + beta * c`` (beta
0 or 1) with the shapes and flags of numdiff.kernels._blas.gemm, for the cores of
numdiff.kernels._conv_cores and _conv_batched: in the loops below when ``loops`` is set, else by
that gemm. The flag is the process's route (numdiff.kernels._conv_route: loops only where
OpenBLAS runs kernels narrower than the CPU's vectors), passed down as an argument. Loop nest (:func:`_accumulate`):
for a block of 4 rows of c and 4 steps of the inner dimension, the 16 values of op(a) sit in
registers while one loop runs along the rows of op(b) and c: 4 loads of op(b) and 4 loads and
stores of c feed 16 multiply-adds per vector, which LLVM vectorises 512 bits wide where the core
has AVX-512 (numdiff.kernels._vecmath.wide_vectors) and 256 where it has AVX2, with fused
multiply-adds (``fastmath={"contract"}``: each term rounded once, as BLAS kernels do). op(a) is
read element by element, so a transposed a costs nothing; a transposed b (the weight gradient's
``col @ dout.T``) is first copied into a (K, N) scratch array, K*N elements, against M*K*N
multiply-adds. Runs on the calling thread; no extra memory otherwise.

Why not BLAS: the cores' products are short, (Co, K) @ (K, T) with T one tile or a few small
images of output positions, and SciPy's OpenBLAS runs them at a fraction of the peak. On the
AMD Zen 5 (AVX-512) the benchmarks run on this session, OpenBLAS detects its "Haswell" kernels,
and measured (one thread, thread CPU time, best of 15, load 5-7; GFLOP/s OpenBLAS / these loops
built for the host / the same loops built for Haswell, ``NUMBA_CPU_NAME=haswell``, i.e. AVX2 on the
same core): 64x512x64 48 / 109 / 104; 64x512x256 58 / 134 / 100; 32x256x256 42 / 136 / 97;
256x64x64 51 / 85 / 79; 128x1024x16 13 / 38 / 39. The loops win with AVX2 too, so their own
build is not what decides; OpenBLAS's is: with its AVX-512 (SkylakeX) kernels on the same core,
BLAS gave the faster model steps, so the loops serve only where OpenBLAS runs narrower kernels
than the CPU's (numdiff.kernels._conv_route). Eight inner steps a block instead of four measured no faster
(70-160 GFLOP/s, noisier). PyTorch's oneDNN reaches ~200 GFLOP/s on these products here. The
bench_models dcgan step (one thread, CPU time; numdiff eager / compile over PyTorch eager), BLAS ->
these loops: 1.46-1.48 -> 1.22-1.24 / 1.32-1.34 -> 1.09-1.22 built for the host, 1.51 -> 1.25 /
1.45 -> 1.31 with every kernel built for Haswell (AVX2); resnet 39.6 -> 34.0 ms, cifar_bn 102 -> 91.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from numdiff.kernels._blas import gemm
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath import wide_vectors

__all__ = ["product"]


@intrinsic
def _unit_stride(typingctx, row):
    """The 1-D view `row` typed as contiguous (layout "C"), for a row the caller has checked to
    have unit stride: a row of a strided 2-D view (a tile of an output plane) is typed "A", and
    LLVM does not vectorise a loop over it whose stride is only known at run time (measured: the
    forward of conv2d 32->64, 16x16 to 8x8, 5x slower than over contiguous rows)."""
    if not (isinstance(row, types.Array) and row.ndim == 1):
        return None
    contiguous = row.copy(layout="C")

    def codegen(context, builder, signature, args):
        source = context.make_array(signature.args[0])(context, builder, args[0])
        view = context.make_array(contiguous)(context, builder)
        for field in ("meminfo", "parent", "nitems", "itemsize", "data", "shape", "strides"):
            setattr(view, field, getattr(source, field))
        return impl_ret_borrowed(context, builder, contiguous, view._getvalue())

    return contiguous(row), codegen


@intrinsic
def _not_inlined(typingctx):
    """Keep the compiled function this call sits in out of its callers; returns None. Inlined
    into a core, the product loop lost its 512-bit vectors (wide_vectors marks the function, not
    the loop) and ran at half its rate (conv2d 32->64, 16x16 to 8x8: 1.67 ms, kept apart 1.0)."""

    def codegen(context, builder, signature, args):
        builder.function.attributes.add("noinline")
        return context.get_dummy_value()

    return types.none(), codegen


@njit(cache=True, nogil=True, fastmath={"contract"})
def _accumulate(a, b, c):
    """``c (M, N) += a (M, K) @ b (K, N)``; b and c unit stride along their rows, a any strides.

    Loop nest: blocks of 4 rows of c x 4 steps of K (then the leftover rows one at a time, and
    the leftover steps one at a time), innermost a vectorised loop over N. No blocking of K for
    the cache: blocks of at most 64 Ki elements of b ran 1.5-2x slower on every product measured,
    the 256x8192x128 one (b 4 MiB) included (121 -> 81 GFLOP/s)."""
    wide_vectors()
    _not_inlined()
    m, depth = a.shape
    n = c.shape[1]
    rows4 = m - m % 4
    depth4 = depth - depth % 4
    for i in range(0, rows4, 4):
        c0, c1, c2, c3 = _unit_stride(c[i]), _unit_stride(c[i + 1]), _unit_stride(c[i + 2]), _unit_stride(c[i + 3])
        for k in range(0, depth4, 4):
            a00, a01, a02, a03 = a[i, k], a[i, k + 1], a[i, k + 2], a[i, k + 3]
            a10, a11, a12, a13 = a[i + 1, k], a[i + 1, k + 1], a[i + 1, k + 2], a[i + 1, k + 3]
            a20, a21, a22, a23 = a[i + 2, k], a[i + 2, k + 1], a[i + 2, k + 2], a[i + 2, k + 3]
            a30, a31, a32, a33 = a[i + 3, k], a[i + 3, k + 1], a[i + 3, k + 2], a[i + 3, k + 3]
            b0, b1, b2, b3 = _unit_stride(b[k]), _unit_stride(b[k + 1]), _unit_stride(b[k + 2]), _unit_stride(b[k + 3])
            for j in range(n):
                x0, x1, x2, x3 = b0[j], b1[j], b2[j], b3[j]
                c0[j] += a00 * x0 + a01 * x1 + a02 * x2 + a03 * x3
                c1[j] += a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3
                c2[j] += a20 * x0 + a21 * x1 + a22 * x2 + a23 * x3
                c3[j] += a30 * x0 + a31 * x1 + a32 * x2 + a33 * x3
        for k in range(depth4, depth):
            a0, a1, a2, a3 = a[i, k], a[i + 1, k], a[i + 2, k], a[i + 3, k]
            bk = _unit_stride(b[k])
            for j in range(n):
                x = bk[j]
                c0[j] += a0 * x
                c1[j] += a1 * x
                c2[j] += a2 * x
                c3[j] += a3 * x
    for i in range(rows4, m):
        ci = _unit_stride(c[i])
        for k in range(0, depth4, 4):
            a0, a1, a2, a3 = a[i, k], a[i, k + 1], a[i, k + 2], a[i, k + 3]
            b0, b1, b2, b3 = _unit_stride(b[k]), _unit_stride(b[k + 1]), _unit_stride(b[k + 2]), _unit_stride(b[k + 3])
            for j in range(n):
                ci[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j]
        for k in range(depth4, depth):
            ak = a[i, k]
            bk = _unit_stride(b[k])
            for j in range(n):
                ci[j] += ak * bk[j]


@njit(cache=True, nogil=True)
def product(loops, trans_a, trans_b, a, b, beta, c):
    """``c = op(a) @ op(b) + beta * c`` for beta 0 (c overwritten, not read) or 1; ``op(x)`` is
    ``x.T`` where the flag is set; Numba loops when ``loops`` is set, else one BLAS call
    (numdiff.kernels._blas.gemm, whose checks then apply). Shapes: op(a) (M, K), op(b) (K, N), c (M, N); b and c need
    unit stride along their last axis (the cores' views have it). Raises ValueError when the
    shapes do not match. See the module docstring for the loop nest and the measurements."""
    if not loops:
        gemm(trans_a, trans_b, 1.0, a, b, beta, c)
        return
    m, n = c.shape
    depth = a.shape[0] if trans_a else a.shape[1]
    if (a.shape[1] if trans_a else a.shape[0]) != m or (b.shape[1] if trans_b else b.shape[0]) != depth:
        raise ValueError("conv product: operand shapes do not match the output")
    if (b.shape[0] if trans_b else b.shape[1]) != n:
        raise ValueError("conv product: operand shapes do not match the output")
    size = c.itemsize
    if m > 0 and n > 1 and (c.strides[1] != size or (depth > 0 and not trans_b and b.strides[1] != size)):
        raise ValueError("conv product: c and b need unit stride along their last axis")
    if beta == 0:
        for i in range(m):
            for j in range(n):
                c[i, j] = 0
    if m == 0 or n == 0 or depth == 0:
        return
    if trans_b:
        # b is (N, K): copy op(b) = b.T into K rows of N so the inner loop runs along rows.
        rows = np.empty((depth, n), c.dtype)
        for j in range(n):
            for k in range(depth):
                rows[k, j] = b[j, k]
        _accumulate(a.T if trans_a else a, rows, c)
    else:
        _accumulate(a.T if trans_a else a, b, c)
