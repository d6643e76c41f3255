"""Straightforward NumPy references for the kernel tests: loops and einsums, written for
clarity, sharing no code with the kernels they check."""

from __future__ import annotations

import math

import numpy as np


def pad_or_crop(x: np.ndarray, top: int, bottom: int, left: int, right: int) -> np.ndarray:
    """Zero-pad (positive) or crop (negative) the last two axes of x."""
    x = np.pad(x, ((0, 0), (0, 0), (max(top, 0), max(bottom, 0)), (max(left, 0), max(right, 0))))
    h, w = x.shape[2], x.shape[3]
    return x[:, :, max(-top, 0) : h - max(-bottom, 0), max(-left, 0) : w - max(-right, 0)]


def _tap_slices(i, j, stride, dilation, oh, ow):
    sh, sw = stride
    dh, dw = dilation
    return (
        slice(None),
        slice(None),
        slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
        slice(j * dw, j * dw + sw * (ow - 1) + 1, sw),
    )


def conv2d(x, w, bias, stride, padding, dilation, groups):
    """out[n, co, oh, ow] = sum over group channels and taps, via one einsum per tap."""
    n, c, _, _ = x.shape
    co, cg, kh, kw = w.shape
    xp = pad_or_crop(x.astype(np.float64), *padding)
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, co, oh, ow))
    xg = xp.reshape(n, groups, cg, xp.shape[2], xp.shape[3])
    wg = w.astype(np.float64).reshape(groups, co // groups, cg, kh, kw)
    for i in range(kh):
        for j in range(kw):
            patch = xg[(slice(None),) + _tap_slices(i, j, stride, dilation, oh, ow)]
            out += np.einsum("ngchw,goc->ngohw", patch, wg[:, :, :, i, j]).reshape(n, co, oh, ow)
    if bias is not None:
        out += bias.reshape(1, -1, 1, 1)
    return out


def conv2d_backward_input(go, w, in_shape, stride, padding, dilation, groups):
    """Adjoint of :func:`conv2d` in x: scatter each tap's contribution into the padded input."""
    n, c, h, wd = in_shape
    co, cg, kh, kw = w.shape
    top, bottom, left, right = padding
    hp, wp = h + top + bottom, wd + left + right
    oh, ow = go.shape[2], go.shape[3]
    dxp = np.zeros((n, groups, cg, hp, wp))
    gog = go.astype(np.float64).reshape(n, groups, co // groups, oh, ow)
    wg = w.astype(np.float64).reshape(groups, co // groups, cg, kh, kw)
    for i in range(kh):
        for j in range(kw):
            contrib = np.einsum("ngohw,goc->ngchw", gog, wg[:, :, :, i, j])
            dxp[(slice(None),) + _tap_slices(i, j, stride, dilation, oh, ow)] += contrib
    dxp = dxp.reshape(n, c, hp, wp)
    # Undo the padding (or the crop) applied in the forward direction.
    full = np.zeros((n, c, h + max(top, 0) + max(bottom, 0), wd + max(left, 0) + max(right, 0)))
    full[:, :, max(-top, 0) : max(-top, 0) + hp, max(-left, 0) : max(-left, 0) + wp] = dxp
    return full[:, :, max(top, 0) : max(top, 0) + h, max(left, 0) : max(left, 0) + wd]


def conv2d_backward_weight(x, go, w_shape, stride, padding, dilation, groups):
    """grad_weight[co, c, i, j] = sum_n,oh,ow go * x under tap (i, j)."""
    n = x.shape[0]
    co, cg, kh, kw = w_shape
    xp = pad_or_crop(x.astype(np.float64), *padding)
    oh, ow = go.shape[2], go.shape[3]
    xg = xp.reshape(n, groups, cg, xp.shape[2], xp.shape[3])
    gog = go.astype(np.float64).reshape(n, groups, co // groups, oh, ow)
    gw = np.zeros((groups, co // groups, cg, kh, kw))
    for i in range(kh):
        for j in range(kw):
            patch = xg[(slice(None),) + _tap_slices(i, j, stride, dilation, oh, ow)]
            gw[:, :, :, i, j] = np.einsum("ngohw,ngchw->goc", gog, patch)
    return gw.reshape(w_shape)


def pool_out(size, k, s, p, d, ceil_mode):
    """PyTorch's pooled length, written out with math.floor / math.ceil."""
    span = (size + 2 * p - d * (k - 1) - 1) / s
    out = (math.ceil(span) if ceil_mode else math.floor(span)) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def max_pool2d(x, k, s, p, d, ceil_mode):
    """Window-by-window max with PyTorch's tie/NaN rules; returns (values, flat indices)."""
    n, c, h, w = x.shape
    oh, ow = pool_out(h, k[0], s[0], p[0], d[0], ceil_mode), pool_out(w, k[1], s[1], p[1], d[1], ceil_mode)
    out = np.zeros((n, c, oh, ow), x.dtype)
    idx = np.zeros((n, c, oh, ow), np.int64)
    for a in range(n):
        for b in range(c):
            for y in range(oh):
                for z in range(ow):
                    rows = [y * s[0] - p[0] + i * d[0] for i in range(k[0])]
                    cols = [z * s[1] - p[1] + j * d[1] for j in range(k[1])]
                    # Start index: first tap at a non-negative row and column (PyTorch's rule,
                    # even when that position lies past the image).
                    best = -np.inf
                    at = min(r for r in rows if r >= 0) * w + min(q for q in cols if q >= 0)
                    cells = [(r, q) for r in rows for q in cols if 0 <= r < h and 0 <= q < w]
                    for r, q in cells:
                        v = x[a, b, r, q]
                        if v > best or np.isnan(v):
                            best, at = v, r * w + q
                    out[a, b, y, z], idx[a, b, y, z] = best, at
    return out, idx


def avg_pool2d(x, k, s, p, ceil_mode, count_include_pad, divisor_override):
    """Window-by-window mean with PyTorch's padding/ceil_mode divisor rules, in float64."""
    n, c, h, w = x.shape
    oh, ow = pool_out(h, k[0], s[0], p[0], 1, ceil_mode), pool_out(w, k[1], s[1], p[1], 1, ceil_mode)
    out = np.zeros((n, c, oh, ow))
    for y in range(oh):
        for z in range(ow):
            r0, q0 = y * s[0] - p[0], z * s[1] - p[1]
            r1, q1 = min(r0 + k[0], h + p[0]), min(q0 + k[1], w + p[1])
            area = (r1 - r0) * (q1 - q0)
            r0, q0, r1, q1 = max(r0, 0), max(q0, 0), min(r1, h), min(q1, w)
            if r0 >= r1 or q0 >= q1:
                continue
            if divisor_override:
                div = divisor_override
            elif count_include_pad:
                div = area
            else:
                div = (r1 - r0) * (q1 - q0)
            out[:, :, y, z] = x[:, :, r0:r1, q0:q1].astype(np.float64).sum(axis=(2, 3)) / div
    return out


def adaptive_windows(size, out):
    """PyTorch's adaptive windows [floor(i*size/out), ceil((i+1)*size/out))."""
    return [(math.floor(i * size / out), math.ceil((i + 1) * size / out)) for i in range(out)]


def adaptive_avg_pool2d(x, out_hw):
    n, c, h, w = x.shape
    res = np.zeros((n, c) + tuple(out_hw))
    for y, (r0, r1) in enumerate(adaptive_windows(h, out_hw[0])):
        for z, (q0, q1) in enumerate(adaptive_windows(w, out_hw[1])):
            res[:, :, y, z] = x[:, :, r0:r1, q0:q1].astype(np.float64).mean(axis=(2, 3))
    return res


def adaptive_max_pool2d(x, out_hw):
    n, c, h, w = x.shape
    vals = np.zeros((n, c) + tuple(out_hw), x.dtype)
    idx = np.zeros((n, c) + tuple(out_hw), np.int64)
    for y, (r0, r1) in enumerate(adaptive_windows(h, out_hw[0])):
        for z, (q0, q1) in enumerate(adaptive_windows(w, out_hw[1])):
            for a in range(n):
                for b in range(c):
                    best, at = -np.inf, r0 * w + q0
                    for r in range(r0, r1):
                        for q in range(q0, q1):
                            v = x[a, b, r, q]
                            if v > best or np.isnan(v):
                                best, at = v, r * w + q
                    vals[a, b, y, z], idx[a, b, y, z] = best, at
    return vals, idx


def avg_pool2d_backward(g, in_shape, k, s, p, ceil_mode, count_include_pad, divisor_override):
    """The adjoint of :func:`avg_pool2d`: each output gradient over its divisor, added over its window."""
    n, c, h, w = in_shape
    out = np.zeros(in_shape)
    for y in range(g.shape[2]):
        for z in range(g.shape[3]):
            r0, q0 = y * s[0] - p[0], z * s[1] - p[1]
            r1, q1 = min(r0 + k[0], h + p[0]), min(q0 + k[1], w + p[1])
            area = (r1 - r0) * (q1 - q0)
            r0, q0, r1, q1 = max(r0, 0), max(q0, 0), min(r1, h), min(q1, w)
            if r0 >= r1 or q0 >= q1:
                continue
            div = divisor_override or (area if count_include_pad else (r1 - r0) * (q1 - q0))
            out[:, :, r0:r1, q0:q1] += g[:, :, y : y + 1, z : z + 1] / div
    return out


def adaptive_avg_pool2d_backward(g, in_shape):
    """The adjoint of :func:`adaptive_avg_pool2d`."""
    out = np.zeros(in_shape)
    for y, (r0, r1) in enumerate(adaptive_windows(in_shape[2], g.shape[2])):
        for z, (q0, q1) in enumerate(adaptive_windows(in_shape[3], g.shape[3])):
            out[:, :, r0:r1, q0:q1] += g[:, :, y : y + 1, z : z + 1] / ((r1 - r0) * (q1 - q0))
    return out


def scatter_planes(g, indices, in_shape):
    """grad_in[n, c].flat[indices[n, c, o]] += g[n, c, o] (indices outside the plane dropped)."""
    out = np.zeros(in_shape)
    plane = int(np.prod(in_shape[2:]))
    for a, b in np.ndindex(*in_shape[:2]):
        for o, at in enumerate(indices[a, b].reshape(-1)):
            if 0 <= at < plane:
                out[a, b].reshape(-1)[at] += g[a, b].reshape(-1)[o]
    return out
