"""The norm and attention kernels open a parallel region only for work that pays for it: serial
below the grain or with fewer prange jobs than threads, and both builds give the same numbers."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.kernels import attention, norm, norm_rows
from numdiff.kernels._blas import PARALLEL_MIN_MACS
from numdiff.kernels._parallel import GRAIN_ELEMENTS, always_parallel


@pytest.mark.parametrize("pair", ["_FORWARD", "_MOMENTS", "_BACKWARD"])
def test_group_norm_runs_serially_below_the_grain_or_on_one_group(two_threads, pair):
    kernels = getattr(norm, pair)
    small = np.empty((4, 1, 8, 1, 16))  # 512 values in 32 groups
    one_group = np.empty((1, 64, 1, 1, GRAIN_ELEMENTS))  # GroupNorm(1) on one image: one job
    large = np.empty((2, 1, 16, 1, GRAIN_ELEMENTS // 16))
    assert norm._pick(kernels, small) is kernels.serial
    assert norm._pick(kernels, one_group) is kernels.serial
    assert norm._pick(kernels, large) is kernels.parallel


def test_layer_norm_rows_run_serially_below_the_grain(two_threads):
    assert norm_rows._FORWARD.pick(16 * 128, jobs=16)[0] is norm_rows._FORWARD.serial
    assert norm_rows._FORWARD.pick(1024 * 128, jobs=1024)[0] is norm_rows._FORWARD.parallel


def test_attention_runs_serially_for_small_or_single_heads(two_threads):
    tiny = np.empty((8, 4, 4))
    wide = np.empty((1, 256, 64))  # one head: one prange job, whatever its size
    many = np.empty((8, 64, 32))
    assert 8 * 4 * 4 * 8 < PARALLEL_MIN_MACS <= 8 * 64 * 64 * 64
    assert attention._pick(attention._FORWARD, tiny, tiny, tiny) is attention._FORWARD.serial
    assert attention._pick(attention._BACKWARD, wide, wide, wide) is attention._BACKWARD.serial
    assert attention._pick(attention._FORWARD, many, many, many) is attention._FORWARD.parallel


def _norm_results(x, w, b, grad):
    out, mean, rstd = np.empty_like(x), np.empty((x.shape[0], x.shape[2])), np.empty((x.shape[0], x.shape[2]))
    norm.group_norm_forward(x, w, b, 1e-5, out, mean, rstd)
    moments = norm.group_norm_moments(x, np.empty((2, x.shape[0], x.shape[2])))
    dx, dw, db = np.empty_like(x), np.empty_like(w), np.empty_like(w)
    norm.group_norm_backward(grad, x, w, mean, rstd, dx, dw, db)
    return out, mean, rstd, moments, dx, dw, db


@pytest.mark.parametrize("view", [(3, 2, 4, 2, 5), (1, 1, 1, 7, 1), (5, 1, 1, 9, 1), (1, 6, 3, 1, 4)])
def test_norm_serial_and_parallel_builds_agree(two_threads, view):
    rng = np.random.default_rng(sum(view))
    x, grad = rng.standard_normal(view) * 2 + 1, rng.standard_normal(view)
    w, b = rng.standard_normal(view[2:4]), rng.standard_normal(view[2:4])
    serial = _norm_results(x, w, b, grad)
    with always_parallel():
        parallel = _norm_results(x, w, b, grad)
    for got, want in zip(parallel, serial):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_serial_and_parallel_builds_agree(two_threads, causal):
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((3, 5, 4)) for _ in range(3))
    no_bias = np.zeros((0, 0, 0))

    def run():
        out = attention.attention_forward(q, k, v, no_bias, 0.5, causal, np.empty((3, 5, 5)))
        grad = np.cos(out)
        grad[..., -1] = 0.0
        res = attention.attention_backward(grad, out, q, k, v, no_bias, 0.5, causal, np.empty((3, 60)))
        return out, res

    serial = run()
    with always_parallel():
        parallel = run()
    for got, want in zip(parallel, serial):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
