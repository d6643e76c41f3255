"""The matrix products of the im2col convolution cores, as Numba loops instead of BLAS calls.

``product(loops, trans_a, trans_b, a, b, beta, c)`` computes ``c = op(a) @ op(b) + beta * c`` (beta
0 or 1) with the shapes and flags of numdiff.kernels._blas.gemm, for the cores of
numdiff.kernels._conv_cores and _conv_batched: in the loops below when ``loops`` is set, else by
that gemm. The flag is the process's route (numdiff.kernels._conv_route: loops only where
OpenBLAS runs kernels narrower than the CPU's vectors), passed down as an argument: True, or None
for BLAS (:attr:`~numdiff.kernels._conv_route.ConvRoute.cores_flag`). Numba prunes a branch on an
argument that is None while it compiles, before it types the rest, so a build for the BLAS route
holds no loop product; with False the loops are compiled too, for nothing (dcgan's empty-cache
first step built :func:`accumulate` four times, once per layout of its operands: 4.4 of 23 CPU s). Loop nest (numdiff.kernels._gemm_loops.accumulate):
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

from numdiff.kernels._blas import gemm
from numdiff.kernels._gemm_loops import accumulate
from numdiff.kernels._kernel_address import any_layout, by_address
from numdiff.kernels._self_healing_cache import njit

__all__ = ["product"]


def _one_build_on_blas(argtypes: tuple) -> tuple:
    """The types `product` is built for: on the BLAS route (``loops`` None) its operands as any
    layout, so that one build serves every core (gemm takes any layout and checks strides at run
    time; dcgan's empty-cache first step built four, 0.11 s each); on the loops route as given,
    since the loops vectorise along rows only where Numba knows them contiguous."""
    return any_layout(argtypes) if argtypes[0] == types.none else argtypes


@by_address(slot_types=_one_build_on_blas)
@njit(cache=True, nogil=True)
def product(loops, trans_a, trans_b, a, b, beta, c):
    """``c = op(a) @ op(b) + beta * c`` for beta 0 (c overwritten, not read) or 1; ``op(x)`` is
    ``x.T`` where the flag is set; Numba loops when ``loops`` is set, else one BLAS call
    (numdiff.kernels._blas.gemm, whose checks then apply) when it is False or None. Shapes: op(a) (M, K), op(b) (K, N), c (M, N); b and c need
    unit stride along their last axis (the cores' views have it). Raises ValueError when the
    shapes do not match. See the module docstring for the loop nest and the measurements."""
    if loops is None or not loops:  # None is pruned while compiling: see the module docstring
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
    one = np.ones(1, c.dtype)[0]  # alpha in c's dtype, so the multiply-adds stay in it
    if trans_b:
        # b is (N, K): copy op(b) = b.T into K rows of N so the inner loop runs along rows.
        rows = np.empty((depth, n), c.dtype)
        for j in range(n):
            for k in range(depth):
                rows[k, j] = b[j, k]
        accumulate(a.T if trans_a else a, rows, one, c)
    else:
        accumulate(a.T if trans_a else a, b, one, c)
