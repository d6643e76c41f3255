"""Pooling geometry, written once: the window and index arithmetic every pooling kernel uses, on
the CPU and on CUDA, and the Python checks of a pooling configuration.

The arithmetic is plain Python functions over ints. numdiff.kernels._pool_compiled compiles them
for the CPU (``*_cpu``, ``njit(inline="always")``) and numdiff.cuda.kernels._pool_device compiles
the very same functions as CUDA device functions, so both targets agree on every window, divisor
and index by construction. They call no other function (a compiled function can only call compiled ones).

Window of output o along one axis: input positions ``o*stride - pad + t*dilation`` for taps
t < kernel. :func:`pool_output_size` is PyTorch's output length rule; the checks run in Python
before any compiled code and use :func:`numdiff._ground.args.int_tuple` for every integer.
"""

from __future__ import annotations

from numdiff._ground.args import GEOMETRY_LIMIT, int_tuple, is_int, remember_checks

__all__ = [
    "adaptive_outputs",
    "adaptive_window",
    "avg_divisor",
    "avg_window",
    "check_adaptive",
    "check_divisor",
    "check_window",
    "pool_output_size",
    "tap_range",
    "window_outputs",
]


# --------------------------------------------------------------------------- arithmetic (both targets)


def tap_range(start, dilation, taps, size):
    """Taps [lo, hi) of a window starting at `start` with ``0 <= start + t*dilation < size``.

    ``lo`` is the first tap at a non-negative position even when that is past the image (then
    hi == lo): ``start + lo*dilation`` is where PyTorch starts a max-pool scan, and so the index
    it reports for a window wholly in padding.
    """
    lo = 0 if start >= 0 else (-start + dilation - 1) // dilation
    last = size - 1 - start
    hi = last // dilation + 1 if last >= 0 else 0
    hi = min(hi, taps)
    return lo, max(lo, hi)


def avg_window(o, stride, pad, kernel, size):
    """Average pooling along one axis: the in-image range [lo, hi) of output `o`'s window and
    PyTorch's padded window length (the window end clipped to size + pad, not to size)."""
    start = o * stride - pad
    end = min(start + kernel, size + pad)
    return max(start, 0), min(end, size), end - start


def avg_divisor(oh, ow, kh, kw, sh, sw, ph, pw, height, width, count_include_pad, divisor_override):
    """The divisor of average-pooling window (oh, ow); 0 for a window with no in-image element.
    (avg_window's arithmetic, repeated: a compiled function cannot call a plain one.)"""
    h_start = oh * sh - ph
    h_end = min(h_start + kh, height + ph)
    w_start = ow * sw - pw
    w_end = min(w_start + kw, width + pw)
    h_in = min(h_end, height) - max(h_start, 0)
    w_in = min(w_end, width) - max(w_start, 0)
    if h_in <= 0 or w_in <= 0:
        return 0
    if divisor_override != 0:
        return divisor_override
    if count_include_pad:
        return (h_end - h_start) * (w_end - w_start)
    return h_in * w_in


def window_outputs(i, stride, pad, kernel, out_size):
    """Outputs [lo, hi) of an undilated pooling whose window [o*stride - pad, +kernel) holds `i`."""
    first = i + pad - kernel + 1
    lo = (first + stride - 1) // stride if first > 0 else 0
    return lo, min((i + pad) // stride + 1, out_size)


def adaptive_window(o, in_size, out_size):
    """Input range [lo, hi) pooled into output `o` of adaptive pooling: floor(o*In/Out) to
    ceil((o+1)*In/Out)."""
    return (o * in_size) // out_size, ((o + 1) * in_size + out_size - 1) // out_size


def adaptive_outputs(i, in_size, out_size):
    """Outputs [lo, hi) of adaptive pooling whose window holds input `i` (the inverse of
    adaptive_window: lo = floor(i*Out/In), hi = ceil((i+1)*Out/In))."""
    return (i * out_size) // in_size, ((i + 1) * out_size + in_size - 1) // in_size


# --------------------------------------------------------------------------- checks (Python)


def pool_output_size(
    size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool
) -> int:
    """Pooled length along one axis (PyTorch's rule: with ceil_mode, a last window that would
    start in the right padding is dropped).

    >>> pool_output_size(5, 2, 2, 0, 1, False), pool_output_size(5, 2, 2, 0, 1, True)
    (2, 3)
    """
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


@remember_checks
def check_window(
    op: str, x_shape: tuple, out_shape: tuple, kernel, stride, padding, dilation, ceil_mode
) -> tuple[int, ...]:
    """Validate a pooling window of x (N, C, H, W) -> out (N, C, OH, OW) (shapes); return
    (kh, kw, sh, sw, ph, pw, dh, dw). Results are remembered per configuration
    (:func:`numdiff._ground.args.remember_checks`).

    >>> check_window("max_pool2d", (1, 1, 4, 4), (1, 1, 2, 2), (2, 2), (2, 2), (0, 0), (1, 1), False)
    (2, 2, 2, 2, 0, 0, 1, 1)
    """
    kh, kw = int_tuple(op, "kernel_size", kernel, 2, 1)
    sh, sw = int_tuple(op, "stride", stride, 2, 1)
    ph, pw = int_tuple(op, "padding", padding, 2, 0)
    dh, dw = int_tuple(op, "dilation", dilation, 2, 1)
    if len(x_shape) != 4:
        raise ValueError(f"{op}: input must be 4-D (N, C, H, W), got shape {tuple(x_shape)}")
    if x_shape[2] < 1 or x_shape[3] < 1:
        raise ValueError(f"{op}: spatial sizes must be positive, got input {tuple(x_shape)}")
    if ph > kh // 2 or pw > kw // 2:
        raise ValueError(f"{op}: padding {(ph, pw)} must be at most half the kernel size {(kh, kw)}")
    height, width = x_shape[2], x_shape[3]
    oh_size = pool_output_size(height, kh, sh, ph, dh, bool(ceil_mode))
    ow_size = pool_output_size(width, kw, sw, pw, dw, bool(ceil_mode))
    if oh_size < 1 or ow_size < 1:
        raise ValueError(
            f"{op}: kernel {(kh, kw)} with dilation {(dh, dw)} does not fit the padded input "
            f"{(height + 2 * ph, width + 2 * pw)}"
        )
    expected = (x_shape[0], x_shape[1], oh_size, ow_size)
    if tuple(out_shape) != expected:
        raise ValueError(f"{op}: output must have shape {expected}, got {tuple(out_shape)}")
    return kh, kw, sh, sw, ph, pw, dh, dw


def check_adaptive(op: str, x_shape: tuple, out_shape: tuple) -> None:
    """Adaptive pooling: 4-D input and output with equal (N, C) and positive spatial sizes, the
    output's at most GEOMETRY_LIMIT.

    >>> check_adaptive("adaptive_avg_pool2d", (1, 2, 5, 5), (1, 2, 2, 3))
    """
    x_shape, out_shape = tuple(x_shape), tuple(out_shape)
    if len(x_shape) != 4 or len(out_shape) != 4 or x_shape[:2] != out_shape[:2]:
        raise ValueError(f"{op}: input and output must be 4-D with equal (N, C), got {x_shape} and {out_shape}")
    if min(out_shape[2:]) < 1 or min(x_shape[2:]) < 1 or max(out_shape[2:]) > GEOMETRY_LIMIT:
        raise ValueError(
            f"{op}: spatial sizes must be positive (output at most {GEOMETRY_LIMIT}), got input "
            f"{x_shape} and output {out_shape}"
        )


def check_divisor(op: str, divisor_override) -> int:
    """divisor_override as the kernels take it: 0 for None, else a non-zero int within the limit.

    >>> check_divisor("avg_pool2d", None), check_divisor("avg_pool2d", 3)
    (0, 3)
    """
    if divisor_override is None:
        return 0
    if not is_int(divisor_override):
        raise TypeError(
            f"{op}: divisor_override must be None or a non-zero int, got {divisor_override!r} "
            f"({type(divisor_override).__name__})"
        )
    value = int(divisor_override)
    if value == 0:
        raise ValueError(f"{op}: divisor_override must be a non-zero int, got {divisor_override!r}")
    if abs(value) > GEOMETRY_LIMIT:
        raise ValueError(f"{op}: divisor_override must be at most {GEOMETRY_LIMIT} in size, got {divisor_override!r}")
    return value
