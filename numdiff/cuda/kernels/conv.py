"""Convolution CUDA kernels: conv1d/conv2d forward, backward_input, backward_weight as implicit GEMMs.

The CPU kernels (numdiff.kernels.conv) gather patches into an im2col matrix and call BLAS; here
the same products run as a tiled GEMM whose operands are never built: each thread computes the
buffer offset of the element it stages from the convolution geometry (zero where a tap falls in
the padding). Per group g, with ``Cg = C/groups``, ``Cog = Co/groups``, ``K = Cg*KH*KW``:

* forward:          ``out[n, g*Cog + m, oh, ow] = sum_k W[g*Cog + m, k] * col[k, (n, oh, ow)]``
* backward_input:   ``dx[n, g*Cg + c, h, w] = sum_(co, i, j) W[g*Cog + co, c, i, j] *
  dout[n, g*Cog + co, (h + pt - i*dh)/sh, (w + pl - j*dw)/sw]`` over the taps where those
  divisions are exact and land inside the output: a gather, so no atomics (this is also the
  transposed convolution's forward)
* backward_weight:  ``dW[g*Cog + m, k] = sum_(n, oh, ow) dout[n, g*Cog + m, oh, ow] * col[k, (n, oh, ow)]``

A block of TILE x TILE threads owns a TILE x TILE tile of one group's product; per step of the
reduction it stages a tile of each operand in shared memory, synchronises and accumulates in a
register (as numdiff.cuda.kernels.matmul). Grid: (columns / TILE, rows / TILE, groups * splits).
backward_weight reduces over N*OH*OW, far longer than its output is wide, so it splits that
reduction into `splits` chunks (one block each) that add into the zeroed gradient atomically;
the other two products have splits = 1 and plain stores.

Arguments follow the CPU kernels exactly (shapes, explicit per-side padding
``(top, bottom, left, right)``, overwritten outputs, the same checks); conv1d is conv2d with
H = 1 (numdiff.ops.conv reshapes) and the bias gradient a plain sum.
Every array is a C-contiguous CudaArray of one float dtype, checked before the launch.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from numba import config, cuda, from_dtype

from numdiff._ground.conv_geometry import conv2d_geometry, conv_output_size
from numdiff.cuda.kernels._checks import check_disjoint, check_float_arrays, check_shape, flat
from numdiff.cuda.kernels.conv_grouped import grouped_backward_input, grouped_backward_weight, grouped_forward
from numdiff.kernels._conv_routing import use_grouped_direct

__all__ = [
    "conv_output_size",
    "conv2d_forward",
    "conv2d_backward_input",
    "conv2d_backward_weight",
]

# Numba's simulator runs every thread in Python and its cost grows with the number of blocks, so
# it gets fewer, smaller splits; 8-wide tiles still make the tiny test shapes cross tile edges.
TILE = 8 if config.ENABLE_CUDASIM else 16
TARGET_BLOCKS = 4 if config.ENABLE_CUDASIM else 512
"""backward_weight splits its reduction until its grid has about this many blocks."""
MIN_CHUNK_STEPS = 2 if config.ENABLE_CUDASIM else 8
"""... but each split keeps at least this many TILE-long reduction steps."""
MAX_GRID_Z = 65535


# --------------------------------------------------------------------------- index arithmetic
# `geom` is (N, C, H, W, Co, OH, OW, KH, KW, sh, sw, pt, pl, dh, dw, groups). Each function maps
# (group, row, column) of one operand of the implicit GEMM to a buffer offset, -1 for a zero.


@cuda.jit(device=True)
def weight_offset(geom, g, m, k):
    """W[g*Cog + m, k] with k = (c, i, j): the weight as a (Co, K) matrix."""
    n_img, c_in, height, width, c_out, oh_size, ow_size, kh, kw, sh, sw, pt, pl, dh, dw, groups = geom
    return (g * (c_out // groups) + m) * ((c_in // groups) * kh * kw) + k


@cuda.jit(device=True)
def weight_t_offset(geom, g, c, r):
    """W[g*Cog + co, c, i, j] with r = (co, i, j): the group's weight transposed, (Cg, Cog*KH*KW)."""
    n_img, c_in, height, width, c_out, oh_size, ow_size, kh, kw, sh, sw, pt, pl, dh, dw, groups = geom
    taps = kh * kw
    return ((g * (c_out // groups) + r // taps) * (c_in // groups) + c) * taps + r % taps


@cuda.jit(device=True)
def output_offset(geom, g, m, q):
    """out[n, g*Cog + m, oh, ow] with q = (n, oh, ow)."""
    n_img, c_in, height, width, c_out, oh_size, ow_size, kh, kw, sh, sw, pt, pl, dh, dw, groups = geom
    plane = oh_size * ow_size
    return ((q // plane) * c_out + g * (c_out // groups) + m) * plane + q % plane


@cuda.jit(device=True)
def input_offset(geom, g, c, q):
    """x[n, g*Cg + c, h, w] with q = (n, h, w)."""
    n_img, c_in, height, width, c_out, oh_size, ow_size, kh, kw, sh, sw, pt, pl, dh, dw, groups = geom
    plane = height * width
    return ((q // plane) * c_in + g * (c_in // groups) + c) * plane + q % plane


@cuda.jit(device=True)
def patch_offset(geom, g, k, q):
    """col[k, q]: x under tap k = (c, i, j) of output q = (n, oh, ow); -1 where it is padding."""
    n_img, c_in, height, width, c_out, oh_size, ow_size, kh, kw, sh, sw, pt, pl, dh, dw, groups = geom
    ow = q % ow_size
    oh = (q // ow_size) % oh_size
    n = q // (ow_size * oh_size)
    j = k % kw
    i = (k // kw) % kh
    c = k // (kw * kh)
    ih = oh * sh - pt + i * dh
    iw = ow * sw - pl + j * dw
    if ih < 0 or ih >= height or iw < 0 or iw >= width:
        return -1
    return ((n * c_in + g * (c_in // groups) + c) * height + ih) * width + iw


@cuda.jit(device=True)
def patch_t_offset(geom, g, q, k):
    """col.T[q, k] (the backward_weight operand)."""
    return patch_offset(geom, g, k, q)


@cuda.jit(device=True)
def grad_out_tap_offset(geom, g, r, q):
    """dout[n, g*Cog + co, oh, ow] reaching input q = (n, h, w) through tap r = (co, i, j):
    oh = (h + pt - i*dh) / sh when exact and inside the output (likewise ow); -1 otherwise."""
    n_img, c_in, height, width, c_out, oh_size, ow_size, kh, kw, sh, sw, pt, pl, dh, dw, groups = geom
    w = q % width
    h = (q // width) % height
    n = q // (width * height)
    j = r % kw
    i = (r // kw) % kh
    co = r // (kw * kh)
    oh_span = h + pt - i * dh
    ow_span = w + pl - j * dw
    if oh_span < 0 or ow_span < 0 or oh_span % sh != 0 or ow_span % sw != 0:
        return -1
    oh = oh_span // sh
    ow = ow_span // sw
    if oh >= oh_size or ow >= ow_size:
        return -1
    return ((n * c_out + g * (c_out // groups) + co) * oh_size + oh) * ow_size + ow


# --------------------------------------------------------------------------- the kernel family


def _make_kernel(a_offset: Callable, b_offset: Callable, out_offset: Callable, accumulate: bool, dtype):
    element = from_dtype(dtype)
    zero = dtype.type(0)

    @cuda.jit
    def implicit_gemm(out, a, b, bias, geom, m_size, n_size, k_size, splits):
        """out[g, m, n] (+)= bias[g*M + m] + sum_k a[g, m, k] * b[g, k, n] through the offset maps.

        Block (TILE, TILE) owns tile (blockIdx.y, blockIdx.x) of group blockIdx.z // splits and
        reduces k over chunk blockIdx.z % splits; bias is empty when there is none.
        """
        a_tile = cuda.shared.array((TILE, TILE), element)
        b_tile = cuda.shared.array((TILE, TILE), element)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        g = cuda.blockIdx.z // splits
        part = cuda.blockIdx.z % splits
        m = cuda.blockIdx.y * TILE + ty
        n = cuda.blockIdx.x * TILE + tx
        chunk = ((k_size + splits - 1) // splits + TILE - 1) // TILE * TILE
        k_begin = part * chunk
        k_end = min(k_begin + chunk, k_size)
        acc = zero
        for t in range(k_begin, k_end, TILE):
            at = a_offset(geom, g, m, t + tx) if m < m_size and t + tx < k_end else -1
            a_tile[ty, tx] = a[at] if at >= 0 else zero
            at = b_offset(geom, g, t + ty, n) if n < n_size and t + ty < k_end else -1
            b_tile[ty, tx] = b[at] if at >= 0 else zero
            cuda.syncthreads()
            for k in range(TILE):
                acc += a_tile[ty, k] * b_tile[k, tx]
            cuda.syncthreads()
        if m < m_size and n < n_size:
            if bias.size > 0:
                acc += bias[g * m_size + m]
            at = out_offset(geom, g, m, n)
            if accumulate:
                cuda.atomic.add(out, at, acc)
            else:
                out[at] = acc

    return implicit_gemm


# kind -> (a offset, b offset, out offset, accumulate)
_PRODUCTS = {
    "forward": (weight_offset, patch_offset, output_offset, False),
    "backward_input": (weight_t_offset, grad_out_tap_offset, input_offset, False),
    "backward_weight": (output_offset, patch_t_offset, weight_offset, True),
}
_KERNELS: dict = {}


def _launch(
    kind: str, out, a, b, bias, geom: tuple, m_size: int, n_size: int, k_size: int, splits: int
) -> None:
    key = (kind, out.dtype)
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = _KERNELS[key] = _make_kernel(*_PRODUCTS[kind], out.dtype)
    groups = geom[-1]
    grid = (math.ceil(n_size / TILE), math.ceil(m_size / TILE), groups * splits)
    bias_buffer = flat(bias) if bias is not None else flat(out)[:0]
    kernel[grid, (TILE, TILE)](flat(out), flat(a), flat(b), bias_buffer, geom, m_size, n_size, k_size, splits)


def _split_count(out_blocks: int, reduction: int, groups: int) -> int:
    """Chunks for backward_weight's reduction: enough blocks to fill the GPU, long enough chunks."""
    by_length = max(1, reduction // (TILE * MIN_CHUNK_STEPS))
    wanted = math.ceil(TARGET_BLOCKS / max(1, out_blocks))
    return max(1, min(wanted, by_length, MAX_GRID_Z // groups))


# --------------------------------------------------------------------------- argument checks


def _geometry(op: str, x_shape: tuple, w, out_shape: tuple, stride, padding, dilation, groups: int) -> tuple:
    """Check a conv2d configuration with the CPU kernels' checks; return the kernels' `geom` tuple."""
    g = conv2d_geometry(op, x_shape, w.shape, out_shape, stride, padding, dilation, groups)
    return (
        g.n_img,
        g.c_in,
        g.height,
        g.width,
        g.c_out,
        g.oh,
        g.ow,
        g.kh,
        g.kw,
        g.sh,
        g.sw,
        g.pt,
        g.pl,
        g.dh,
        g.dw,
        g.groups,
    )


# --------------------------------------------------------------------------- conv2d


def conv2d_forward(x, weight, bias, out, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """``out[n, co, oh, ow] = bias[co] + sum_{c in group(co), i, j} weight[co, c, i, j] *
    x[n, c, oh*sh - pt + i*dh, ow*sw - pl + j*dw]`` (zero outside the image), overwriting out.

    Shapes: x (N, C, H, W), weight (Co, C/groups, KH, KW), bias (Co,) or None, out (N, Co, OH, OW).
    Threads: one per output element, in TILE x TILE blocks over (Co/groups, N*OH*OW) per group.
    """
    op = "conv2d_forward"
    check_float_arrays(op, x=x, weight=weight, out=out)
    geom = _geometry(op, x.shape, weight, out.shape, stride, padding, dilation, groups)
    if bias is not None:
        check_float_arrays(op, x=x, bias=bias)
        check_shape(op, "bias", bias, (weight.shape[0],))
    check_disjoint(op, {"out": out}, {"x": x, "weight": weight, "bias": bias})
    if use_grouped_direct(geom[-1], weight.shape[1]):
        bias_buffer = flat(bias) if bias is not None else flat(out)[:0]
        grouped_forward(flat(x), flat(weight), bias_buffer, flat(out), geom)
        return out
    n_img, c_out, oh_size, ow_size = out.shape
    k_size = weight.shape[1] * weight.shape[2] * weight.shape[3]
    if out.size:
        _launch(
            "forward", out, weight, x, bias, geom, c_out // geom[-1], n_img * oh_size * ow_size, k_size, 1
        )
    return out


def conv2d_backward_input(
    grad_out, weight, grad_in, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1
):
    """Input gradient of :func:`conv2d_forward` (= transposed-conv forward), overwriting grad_in.

    ``grad_in[n, c, h, w] = sum over (co, i, j) with h = oh*sh - pt + i*dh, w = ow*sw - pl + j*dw
    of weight[co, c, i, j] * grad_out[n, co, oh, ow]``.

    Shapes: grad_out (N, Co, OH, OW), weight (Co, C/groups, KH, KW), grad_in (N, C, H, W).
    Threads: one per input element (a gather over taps), TILE x TILE blocks over (C/groups, N*H*W).
    """
    op = "conv2d_backward_input"
    check_float_arrays(op, grad_out=grad_out, weight=weight, grad_in=grad_in)
    geom = _geometry(op, grad_in.shape, weight, grad_out.shape, stride, padding, dilation, groups)
    check_disjoint(op, {"grad_in": grad_in}, {"grad_out": grad_out, "weight": weight})
    if use_grouped_direct(geom[-1], weight.shape[1]):
        grouped_backward_input(flat(grad_out), flat(weight), flat(grad_in), geom)
        return grad_in
    n_img, c_in, height, width = grad_in.shape
    c_out, cg, kh, kw = weight.shape
    if grad_in.size:
        _launch(
            "backward_input", grad_in, weight, grad_out, None, geom,
            cg, n_img * height * width, (c_out // geom[-1]) * kh * kw, 1,
        )  # fmt: skip
    return grad_in


def conv2d_backward_weight(
    x, grad_out, grad_weight, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1
):
    """Weight gradient of :func:`conv2d_forward`, overwriting grad_weight.

    ``grad_weight[co, c, i, j] = sum_{n, oh, ow} grad_out[n, co, oh, ow] *
    x[n, g*Cg + c, oh*sh - pt + i*dh, ow*sw - pl + j*dw]``.

    Shapes: x (N, C, H, W), grad_out (N, Co, OH, OW), grad_weight (Co, C/groups, KH, KW).
    Threads: one per weight element and reduction chunk, TILE x TILE blocks over (Co/groups, K);
    chunks of N*OH*OW add into the zeroed gradient atomically.
    """
    op = "conv2d_backward_weight"
    check_float_arrays(op, x=x, grad_out=grad_out, grad_weight=grad_weight)
    geom = _geometry(op, x.shape, grad_weight, grad_out.shape, stride, padding, dilation, groups)
    check_disjoint(op, {"grad_weight": grad_weight}, {"x": x, "grad_out": grad_out})
    n_img, c_out, oh_size, ow_size = grad_out.shape
    groups = geom[-1]
    m_size = c_out // groups
    k_size = grad_weight.shape[1] * grad_weight.shape[2] * grad_weight.shape[3]
    reduction = n_img * oh_size * ow_size
    if use_grouped_direct(groups, grad_weight.shape[1]):
        grouped_backward_weight(flat(x), flat(grad_out), flat(grad_weight), geom)
        return grad_weight
    grad_weight[...] = 0
    if grad_weight.size and reduction:
        out_blocks = math.ceil(m_size / TILE) * math.ceil(k_size / TILE) * groups
        splits = _split_count(out_blocks, reduction, groups)
        _launch("backward_weight", grad_weight, grad_out, x, None, geom, m_size, k_size, reduction, splits)
    return grad_weight
