"""Depthwise and grouped convolutions with few channels a group (CUDA): the twins of the CPU
stencil in numdiff.kernels._conv_grouped, which numdiff.cuda.kernels.conv routes here under the
same rule (numdiff.kernels._conv_routing.use_grouped_direct). With ``Cg*KH*KW`` a handful of
taps, the implicit GEMM's shared-memory tiles would be mostly padding; each thread here sums its
taps straight from global memory instead.

* forward:          one thread per output element, ``Cg*KH*KW`` taps.
* backward_input:   one thread per input element, a gather over the ``Cog*KH*KW`` taps whose
  stride divisions are exact (no atomics).
* backward_weight:  one block per weight element; its threads stride over ``N*OH*OW`` and add
  their partial sums in a shared-memory tree (no atomics, the same order on every run).

`geom` is the tuple of numdiff.cuda.kernels.conv: (N, C, H, W, Co, OH, OW, KH, KW, sh, sw, pt,
pl, dh, dw, groups). Arguments are flat C-contiguous buffers, checked by the caller.
"""

from __future__ import annotations

import math

from numba import config, cuda, from_dtype

__all__ = ["grouped_backward_input", "grouped_backward_weight", "grouped_forward"]

THREADS = 32 if config.ENABLE_CUDASIM else 256
"""Threads a block (a power of two: the weight gradient's tree halves it)."""

_KERNELS: dict = {}


def _make_kernels(dtype) -> tuple:
    zero = dtype.type(0)
    element = from_dtype(dtype)

    @cuda.jit
    def forward(x, w, bias, out, geom):
        """``out[n, co, oh, ow] = bias[co] + sum_{c, i, j} w[co, c, i, j] * x[n, g*Cg + c, ih, iw]``."""
        n_img, c_in, height, width, c_out, oh_size, ow_size, kh, kw, sh, sw, pt, pl, dh, dw, groups = geom
        idx = cuda.grid(1)
        if idx >= out.size:
            return
        ow = idx % ow_size
        rest = idx // ow_size
        oh = rest % oh_size
        rest //= oh_size
        co = rest % c_out
        n = rest // c_out
        cg = c_in // groups
        g = co // (c_out // groups)
        acc = bias[co] if bias.size > 0 else zero
        for c in range(cg):
            for i in range(kh):
                ih = oh * sh - pt + i * dh
                if ih < 0 or ih >= height:
                    continue
                for j in range(kw):
                    iw = ow * sw - pl + j * dw
                    if 0 <= iw < width:
                        acc += w[((co * cg + c) * kh + i) * kw + j] * x[((n * c_in + g * cg + c) * height + ih) * width + iw]
        out[idx] = acc

    @cuda.jit
    def backward_input(go, w, dx, geom):
        """``dx[n, g*Cg + c, h, w'] = sum over (o, i, j) with h = oh*sh - pt + i*dh, w' = ow*sw - pl +
        j*dw of w[g*Cog + o, c, i, j] * go[n, g*Cog + o, oh, ow]``."""
        n_img, c_in, height, width, c_out, oh_size, ow_size, kh, kw, sh, sw, pt, pl, dh, dw, groups = geom
        idx = cuda.grid(1)
        if idx >= dx.size:
            return
        iw = idx % width
        rest = idx // width
        ih = rest % height
        rest //= height
        ci = rest % c_in
        n = rest // c_in
        cg = c_in // groups
        cog = c_out // groups
        g = ci // cg
        c = ci - g * cg
        acc = zero
        for i in range(kh):
            th = ih + pt - i * dh
            if th < 0 or th % sh != 0 or th // sh >= oh_size:
                continue
            oh = th // sh
            for j in range(kw):
                tw = iw + pl - j * dw
                if tw < 0 or tw % sw != 0 or tw // sw >= ow_size:
                    continue
                ow = tw // sw
                for o in range(cog):
                    co = g * cog + o
                    acc += w[((co * cg + c) * kh + i) * kw + j] * go[((n * c_out + co) * oh_size + oh) * ow_size + ow]
        dx[idx] = acc

    @cuda.jit
    def backward_weight(x, go, dw_out, geom):
        """Block b owns ``dw[co, c, i, j]`` (flat index b): ``sum_{n, oh, ow} go[n, co, oh, ow] *
        x[n, g*Cg + c, oh*sh - pt + i*dh, ow*sw - pl + j*dw]``."""
        n_img, c_in, height, width, c_out, oh_size, ow_size, kh, kw, sh, sw, pt, pl, dh, dw, groups = geom
        partial = cuda.shared.array(THREADS, element)
        b = cuda.blockIdx.x
        t = cuda.threadIdx.x
        j = b % kw
        rest = b // kw
        i = rest % kh
        rest //= kh
        cg = c_in // groups
        c = rest % cg
        co = rest // cg
        g = co // (c_out // groups)
        acc = zero
        for p in range(t, n_img * oh_size * ow_size, THREADS):
            ow = p % ow_size
            oh = (p // ow_size) % oh_size
            n = p // (ow_size * oh_size)
            ih = oh * sh - pt + i * dh
            iw = ow * sw - pl + j * dw
            if 0 <= ih < height and 0 <= iw < width:
                acc += go[((n * c_out + co) * oh_size + oh) * ow_size + ow] * x[
                    ((n * c_in + g * cg + c) * height + ih) * width + iw
                ]
        partial[t] = acc
        cuda.syncthreads()
        half = THREADS // 2
        while half > 0:
            if t < half:
                partial[t] += partial[t + half]
            cuda.syncthreads()
            half //= 2
        if t == 0:
            dw_out[b] = partial[0]

    return forward, backward_input, backward_weight


def _kernels(dtype) -> tuple:
    kernels = _KERNELS.get(dtype)
    if kernels is None:
        kernels = _KERNELS[dtype] = _make_kernels(dtype)
    return kernels


def grouped_forward(x, w, bias, out, geom: tuple) -> None:
    """Launch the forward over flat buffers: one thread per output element (bias empty if none)."""
    if out.size:
        _kernels(out.dtype)[0][math.ceil(out.size / THREADS), THREADS](x, w, bias, out, geom)


def grouped_backward_input(go, w, dx, geom: tuple) -> None:
    """Launch the input gradient over flat buffers: one thread per input element, overwriting dx."""
    if dx.size:
        _kernels(dx.dtype)[1][math.ceil(dx.size / THREADS), THREADS](go, w, dx, geom)


def grouped_backward_weight(x, go, dw, geom: tuple) -> None:
    """Launch the weight gradient over flat buffers: one block per weight element, overwriting dw."""
    if dw.size:
        _kernels(dw.dtype)[2][dw.size, THREADS](x, go, dw, geom)
