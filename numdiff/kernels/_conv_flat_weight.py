"""Weight gradient of a convolution to few output channels, as long dot products over zero-padded
planes (CPU, Numba, no BLAS).

``gw[g, co, (c, i, j)] = sum_{n, oh, ow} go[n, g, co, oh, ow] * x[n, g, c, oh - pt + i*dh,
ow - pl + j*dw]``. im2col's product for it is ``col (K, T) @ dout.T (T, Cog)``, whose inner loop
runs along Cog (3 for an image-producing layer) and whose column buffer is written and read for Cog multiply-adds an
element: measured 3.3-4.3x PyTorch's time for 16 -> 3 9x9, 32 -> 3 3x3 and 16 -> 8 5x5 at 64x64.

Method: each image's input planes are copied once, zero-padded and split into the stride's
``sh*sw`` phases (phase (a, b) holds the padded rows a, a + sh, ... and columns b, b + sw, ...),
each ``HQ = OH + (KH-1)*dh // sh`` rows of ``WQ = OW + (KW-1)*dw // sw`` columns (plus
``(KW-1)*dw // sw`` elements of slack), and the output gradient to rows of WQ columns whose last
``WQ - OW`` are zero. With output position ``f = oh*WQ + ow``, tap (i, j) reads phase
``((i*dh) % sh, (j*dw) % sw)`` at ``f + (i*dh // sh)*WQ + j*dw // sw``, one shift of the whole
flat plane; the padding columns multiply zeros (so a non-finite input value next to them can
turn into NaN in a tap that does not read it, as Winograd's transforms can). So every (c, i, j) and block of 4 output channels is 4 dot
products of length ``OH*WP`` per image, contiguous loops that LLVM vectorises 512 bits wide with
the partial sums in registers (``fastmath={"reassoc", "contract"}``); tap columns go in pairs,
2 loads of the input and 4 of the gradient per 8 multiply-adds, no column buffer, no short rows.
The positions are cut into chunks of :data:`CHUNK` so that the chunk's 4 gradient rows and the
input rows every tap reads stay in L1 while all taps pass over them (one pass over whole planes
per tap ran 1.7x slower: 16 -> 3 9x9 at 64x64, 3.7 against 2.2 ms).

Loop nest: prange over images x groups (the padded copies); then prange over threads' equal
shares of (group, input channel) jobs, which write disjoint weight entries: image, chunk, block
of 4 output channels, tap row, pair of tap columns, position. Extra memory: the padded copies,
about the size of x and grad_out (Cog rounded up to a multiple of 4), and a (KH*KW, Cog) sum per
thread. Accuracy: float sums reassociated into vector lanes and chunks (float32 tolerance, not
bit-for-bit with im2col's order). Routing rule and measurements:
numdiff.kernels._conv_routing_flat.use_flat_weight.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels._vecmath import wide_vectors

__all__ = ["flat_backward_weight_core"]

CHUNK = 1024
"""Flat positions per pass: 4 gradient rows and the input rows all taps read stay in L1."""


@njit(cache=True, nogil=True, inline="always")
def _add_block(acc, tap, co, s0, s1, s2, s3):
    """Add one tap's 4 output channels' sums into the job's (taps, channels) accumulator."""
    acc[tap, co] += s0
    acc[tap, co + 1] += s1
    acc[tap, co + 2] += s2
    acc[tap, co + 3] += s3


def flat_backward_weight_core(x5, go4, gw3, kh, kw, sh, sw, pt, pl, dh, dw, oh_size, ow_size, parts):
    """x5 (N, G, Cg, H, W), go4 (N, G, Cog, OH*OW), gw3 (G, Cog, Cg*KH*KW) overwritten; stride
    (sh, sw), dilation (dh, dw), top and left padding pt, pl (negative crops)."""
    n_img, groups, cg, height, width = x5.shape
    cog = go4.shape[2]
    blocks = (cog + 3) // 4
    hq = oh_size + (kh - 1) * dh // sh
    wq = ow_size + (kw - 1) * dw // sw
    slack = (kw - 1) * dw // sw
    length = oh_size * wq
    xp = np.zeros((n_img * groups, cg, sh * sw, hq * wq + slack), x5.dtype)
    gp = np.zeros((n_img * groups, blocks * 4, length), x5.dtype)
    for plane in prange(n_img * groups):
        n, g = plane // groups, plane % groups
        for c in range(cg):
            for phase in range(sh * sw):
                a, b = phase // sw, phase % sw
                # Phase (a, b) holds the padded input's rows a, a + sh, ... and columns b, b + sw, ...
                q0 = min(wq, max(0, (pl - b + sw - 1) // sw))
                q1 = max(q0, min(wq, (width + pl - b + sw - 1) // sw))
                for r in range(hq):
                    row = r * sh + a - pt
                    if row < 0 or row >= height:
                        continue
                    src = x5[n, g, c, row]
                    dst = xp[plane, c, phase, r * wq : (r + 1) * wq]
                    for q in range(q0, q1):
                        dst[q] = src[q * sw + b - pl]
        for co in range(cog):
            for oh in range(oh_size):
                src = go4[n, g, co, oh * ow_size : (oh + 1) * ow_size]
                dst = gp[plane, co, oh * wq : oh * wq + ow_size]
                for q in range(ow_size):
                    dst[q] = src[q]
    zero = x5.dtype.type(0)
    taps = kh * kw
    jobs = groups * cg
    share = (jobs + parts - 1) // parts
    for part in prange(parts):
        acc = np.empty((taps, blocks * 4), x5.dtype)
        for job in range(part * share, min(jobs, (part + 1) * share)):
            g, c = job // cg, job % cg
            acc[:] = 0
            for n in range(n_img):
                plane = n * groups + g
                for f0 in range(0, length, CHUNK):
                    f1 = min(length, f0 + CHUNK)
                    for block in range(blocks):
                        g0 = gp[plane, 4 * block, f0:f1]
                        g1 = gp[plane, 4 * block + 1, f0:f1]
                        g2 = gp[plane, 4 * block + 2, f0:f1]
                        g3 = gp[plane, 4 * block + 3, f0:f1]
                        for i in range(kh):
                            row_phase, row_shift = (i * dh) % sh * sw, (i * dh) // sh * wq
                            # Tap columns in pairs: the pair shares the gradient's 4 loads.
                            for j in range(0, kw - 1, 2):
                                ea = row_shift + j * dw // sw + f0
                                eb = row_shift + (j + 1) * dw // sw + f0
                                xa = xp[plane, c, row_phase + j * dw % sw, ea : ea + f1 - f0]
                                xb = xp[plane, c, row_phase + (j + 1) * dw % sw, eb : eb + f1 - f0]
                                s0 = s1 = s2 = s3 = r0 = r1 = r2 = r3 = zero
                                for f in range(f1 - f0):
                                    wide_vectors()
                                    va, vb = xa[f], xb[f]
                                    d0, d1, d2, d3 = g0[f], g1[f], g2[f], g3[f]
                                    s0 += d0 * va
                                    s1 += d1 * va
                                    s2 += d2 * va
                                    s3 += d3 * va
                                    r0 += d0 * vb
                                    r1 += d1 * vb
                                    r2 += d2 * vb
                                    r3 += d3 * vb
                                _add_block(acc, i * kw + j, 4 * block, s0, s1, s2, s3)
                                _add_block(acc, i * kw + j + 1, 4 * block, r0, r1, r2, r3)
                            if kw % 2:
                                ea = row_shift + (kw - 1) * dw // sw + f0
                                xa = xp[plane, c, row_phase + (kw - 1) * dw % sw, ea : ea + f1 - f0]
                                s0 = s1 = s2 = s3 = zero
                                for f in range(f1 - f0):
                                    wide_vectors()
                                    va = xa[f]
                                    s0 += g0[f] * va
                                    s1 += g1[f] * va
                                    s2 += g2[f] * va
                                    s3 += g3[f] * va
                                _add_block(acc, i * kw + kw - 1, 4 * block, s0, s1, s2, s3)
            for co in range(cog):
                for tap in range(taps):
                    gw3[g, co, c * taps + tap] = acc[tap, co]


flat_backward_weight_core = serial_and_parallel(
    flat_backward_weight_core, nogil=True, fastmath={"reassoc", "contract"}
)
