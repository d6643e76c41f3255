"""Average-pooling CUDA kernels with the CPU kernels' conventions (numdiff.kernels.pool).

Forward: one thread per output element, grid-stride over N*C*OH*OW, summing its window (in
float64, as the CPU does) and dividing by PyTorch's divisor (`avg_divisor`: count_include_pad,
ceil_mode's clipped last window, divisor_override; 0 output for a window wholly in padding).
Backward: one thread per input element, grid-stride over N*C*H*W, gathering the gradients of the
outputs whose windows hold it (`window_outputs`, `adaptive_outputs`), each over its divisor. A
gather writes every input once, so it needs no atomics and no zeroing. Both are linear, so the
backward's own backward is the forward with the same arguments.

Adaptive average pooling of In to Out uses windows [floor(o*In/Out), ceil((o+1)*In/Out)).
1-d pooling is 2-d pooling with H = 1 (numdiff.ops.pool reshapes). Windows and divisors are
numdiff._ground.pool_geometry's, the CPU kernels' own. Arrays are C-contiguous CudaArrays of one
float dtype, checked before the launch.
"""

from __future__ import annotations

from numba import cuda

from numdiff._ground.pool_geometry import check_adaptive, check_divisor, check_window
from numdiff.cuda.kernels._checks import check_disjoint, check_float_arrays, flat
from numdiff.cuda.kernels._index import grid_1d
from numdiff.cuda.kernels._pool_device import (
    adaptive_outputs,
    adaptive_window,
    avg_divisor,
    avg_window,
    window_outputs,
)


@cuda.jit
def avg_pool2d_kernel(
    x, out, height, width, oh_size, ow_size, kh, kw, sh, sw, ph, pw, include_pad, override, n
):
    """out[p, oh, ow] = sum of plane p over the window / its divisor, for t = (p, oh, ow) < n."""
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        ow = t % ow_size
        oh = (t // ow_size) % oh_size
        base = (t // (ow_size * oh_size)) * height * width
        divisor = avg_divisor(oh, ow, kh, kw, sh, sw, ph, pw, height, width, include_pad, override)
        h0, h1, _ = avg_window(oh, sh, ph, kh, height)
        w0, w1, _ = avg_window(ow, sw, pw, kw, width)
        total = 0.0
        for ih in range(h0, h1):
            for iw in range(w0, w1):
                total += x[base + ih * width + iw]
        out[t] = total / divisor if divisor != 0 else 0.0


@cuda.jit
def avg_pool2d_backward_kernel(
    grad_out, grad_in, height, width, oh_size, ow_size, kh, kw, sh, sw, ph, pw, include_pad, override, n
):
    """grad_in[p, h, w] = sum over windows (oh, ow) holding (h, w) of grad_out[p, oh, ow] / divisor."""
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        w = t % width
        h = (t // width) % height
        base = (t // (width * height)) * oh_size * ow_size
        oh_lo, oh_hi = window_outputs(h, sh, ph, kh, oh_size)
        ow_lo, ow_hi = window_outputs(w, sw, pw, kw, ow_size)
        total = 0.0
        for oh in range(oh_lo, oh_hi):
            for ow in range(ow_lo, ow_hi):
                divisor = avg_divisor(oh, ow, kh, kw, sh, sw, ph, pw, height, width, include_pad, override)
                total += grad_out[base + oh * ow_size + ow] / divisor
        grad_in[t] = total


@cuda.jit
def adaptive_avg_pool2d_kernel(x, out, height, width, oh_size, ow_size, n):
    """out[p, oh, ow] = mean of plane p over adaptive window (oh, ow), for t = (p, oh, ow) < n."""
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        ow = t % ow_size
        oh = (t // ow_size) % oh_size
        base = (t // (ow_size * oh_size)) * height * width
        h0, h1 = adaptive_window(oh, height, oh_size)
        w0, w1 = adaptive_window(ow, width, ow_size)
        total = 0.0
        for ih in range(h0, h1):
            for iw in range(w0, w1):
                total += x[base + ih * width + iw]
        out[t] = total / ((h1 - h0) * (w1 - w0))


@cuda.jit
def adaptive_avg_pool2d_backward_kernel(grad_out, grad_in, height, width, oh_size, ow_size, n):
    """grad_in[p, h, w] = sum over adaptive windows holding (h, w) of grad_out / window size."""
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        w = t % width
        h = (t // width) % height
        base = (t // (width * height)) * oh_size * ow_size
        oh_lo, oh_hi = adaptive_outputs(h, height, oh_size)
        ow_lo, ow_hi = adaptive_outputs(w, width, ow_size)
        total = 0.0
        for oh in range(oh_lo, oh_hi):
            h0, h1 = adaptive_window(oh, height, oh_size)
            for ow in range(ow_lo, ow_hi):
                w0, w1 = adaptive_window(ow, width, ow_size)
                total += grad_out[base + oh * ow_size + ow] / ((h1 - h0) * (w1 - w0))
        grad_in[t] = total


# --------------------------------------------------------------------------- launchers


def _avg_sizes(
    op, image, pooled, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    """Check an avg-pool configuration of `image` (N, C, H, W) -> `pooled` (N, C, OH, OW); return
    the kernels' size arguments (H, W, OH, OW, kh, kw, sh, sw, ph, pw, include_pad, override)."""
    kh, kw, sh, sw, ph, pw, _, _ = check_window(
        op, image.shape, pooled.shape, kernel_size, stride, padding, (1, 1), ceil_mode
    )
    override = check_divisor(op, divisor_override)
    return (*image.shape[2:], *pooled.shape[2:], kh, kw, sh, sw, ph, pw, bool(count_include_pad), override)


def avg_pool2d_forward(
    x,
    out,
    kernel_size,
    stride,
    padding=(0, 0),
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """``out[n, c, oh, ow] = sum(window) / divisor`` with PyTorch's window and divisor rules.

    Shapes: x (N, C, H, W), out (N, C, OH, OW). Threads: one per output element (grid-stride).
    """
    op = "avg_pool2d_forward"
    check_float_arrays(op, x=x, out=out)
    sizes = _avg_sizes(
        op, x, out, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )
    check_disjoint(op, {"out": out}, {"x": x})
    if out.size:
        blocks, threads = grid_1d(out.size)
        avg_pool2d_kernel[blocks, threads](flat(x), flat(out), *sizes, out.size)
    return out


def avg_pool2d_backward(
    grad_out, grad_in, kernel_size, stride, padding=(0, 0), ceil_mode=False, count_include_pad=True,
    divisor_override=None,
):  # fmt: skip
    """Input gradient of :func:`avg_pool2d_forward`, overwriting grad_in: each output gradient over
    its window's divisor, summed at every in-image element of the window.

    Shapes: grad_out (N, C, OH, OW), grad_in (N, C, H, W). Threads: one per input element.
    """
    op = "avg_pool2d_backward"
    check_float_arrays(op, grad_out=grad_out, grad_in=grad_in)
    sizes = _avg_sizes(
        op, grad_in, grad_out, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )
    check_disjoint(op, {"grad_in": grad_in}, {"grad_out": grad_out})
    if grad_in.size:
        blocks, threads = grid_1d(grad_in.size)
        avg_pool2d_backward_kernel[blocks, threads](flat(grad_out), flat(grad_in), *sizes, grad_in.size)
    return grad_in


def _adaptive_sizes(op, image, pooled) -> tuple:
    check_adaptive(op, image.shape, pooled.shape)
    return (*image.shape[2:], *pooled.shape[2:])


def adaptive_avg_pool2d_forward(x, out):
    """Adaptive average pooling of x (N, C, H, W) to out (N, C, OH, OW); one thread per output."""
    op = "adaptive_avg_pool2d_forward"
    check_float_arrays(op, x=x, out=out)
    sizes = _adaptive_sizes(op, x, out)
    check_disjoint(op, {"out": out}, {"x": x})
    if out.size:
        blocks, threads = grid_1d(out.size)
        adaptive_avg_pool2d_kernel[blocks, threads](flat(x), flat(out), *sizes, out.size)
    return out


def adaptive_avg_pool2d_backward(grad_out, grad_in):
    """Input gradient of :func:`adaptive_avg_pool2d_forward`, overwriting grad_in; one thread per
    input element."""
    op = "adaptive_avg_pool2d_backward"
    check_float_arrays(op, grad_out=grad_out, grad_in=grad_in)
    sizes = _adaptive_sizes(op, grad_in, grad_out)
    check_disjoint(op, {"grad_in": grad_in}, {"grad_out": grad_out})
    if grad_in.size:
        blocks, threads = grid_1d(grad_in.size)
        adaptive_avg_pool2d_backward_kernel[blocks, threads](
            flat(grad_out), flat(grad_in), *sizes, grad_in.size
        )
    return grad_in
