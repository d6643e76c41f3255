"""Parallel kernels split their work into equal contiguous runs over the flattened work: the
im2col convolution cores over (image, group, output row) and (image, group, input channel), the
generated elementwise kernels over their first two axes, batched products over (slice, output
row). The runs must cover the work exactly once, whatever the batch (1, odd), the thread count
(2, 3, 5 parts on Numba's pool for the convolutions) and the tile size."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.kernels import _blas, _conv_routing, _parallel, conv, elementwise, matmul
from numdiff.kernels._parallel import always_parallel
from numdiff.kernels.elementwise import RULES
from tests.kernels import kernel_reference as ref

# (N, C, H, W, Co, KH, KW, stride, padding (t, b, l, r), dilation, groups)
CONV_CASES = [
    (3, 3, 7, 6, 4, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (1, 4, 9, 8, 6, 3, 2, (2, 1), (1, 0, 2, 1), (1, 2), 2),
    (5, 6, 5, 7, 3, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 3),  # pointwise, grouped
    (5, 5, 11, 4, 2, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),
    (1, 7, 3, 9, 5, 2, 2, (1, 1), (0, 1, 0, 1), (1, 1), 1),
]


@pytest.fixture(params=[2, 3, 5], ids=lambda parts: f"{parts}parts")
def parts(request, monkeypatch):
    """Every KernelPair.pick hands out this many parts, with the parallel build."""
    monkeypatch.setattr(_parallel, "get_num_threads", lambda: request.param)
    return request.param


@pytest.fixture(params=["whole_tiles", "one_row_tiles"])
def tiles(request, monkeypatch):
    """Tiles of as many rows as fit, or of one row (runs then start and end inside planes)."""
    monkeypatch.setattr(_conv_routing, "BATCHED_MAX_POSITIONS", 0)
    monkeypatch.setattr(_conv_routing, "GROUPED_DIRECT_MAX_CHANNELS", 0)
    monkeypatch.setattr(_conv_routing, "NARROW_MAX_CHANNELS", 0)
    if request.param == "one_row_tiles":
        monkeypatch.setattr(_conv_routing, "TILE_ELEMENTS", 1)
    return request.param


@pytest.mark.parametrize("case", CONV_CASES)
def test_im2col_cores_cover_odd_batches_on_any_split(case, parts, tiles):
    n, c, h, w, co, kh, kw, stride, padding, dilation, groups = case
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, c, h, w))
    weight = rng.standard_normal((co, c // groups, kh, kw))
    bias = rng.standard_normal(co)
    expected = ref.conv2d(x, weight, bias, stride, padding, dilation, groups)
    go = rng.standard_normal(expected.shape)
    out, gi, gw = np.full(expected.shape, np.nan), np.full_like(x, np.nan), np.full_like(weight, np.nan)
    with always_parallel():
        conv.conv2d_forward(x, weight, bias, out, stride, padding, dilation, groups)
        conv.conv2d_backward_input(go, weight, gi, stride, padding, dilation, groups)
        conv.conv2d_backward_weight(x, go, gw, stride, padding, dilation, groups)
    np.testing.assert_allclose(out, expected, rtol=1e-11, atol=1e-11)
    gi_ref = ref.conv2d_backward_input(go, weight, x.shape, stride, padding, dilation, groups)
    np.testing.assert_allclose(gi, gi_ref, rtol=1e-11, atol=1e-11)
    gw_ref = ref.conv2d_backward_weight(x, go, weight.shape, stride, padding, dilation, groups)
    np.testing.assert_allclose(gw, gw_ref, rtol=1e-11, atol=4e-11)



# Output shapes above elementwise.GRAIN whose first axis is 1 or odd, with a broadcast operand, so
# the N-d parallel loop runs (first_axis x second_axis cells split between the threads).
BROADCAST_SHAPES = [
    ((1, 3, 110, 110), (3, 1, 1)),
    ((3, 5, 47, 53), (1, 5, 1, 53)),
    ((1, 40000), (40000,)),
    ((3, 13001), (3, 1)),
    ((5, 1, 90, 80), (80,)),
    ((3, 200, 7, 9), (200, 1, 1)),  # coalesced to (3, 200, 63): axis 0 of 3
    ((3, 4, 5, 6, 7, 60), (4, 1, 6, 1, 60)),  # rank 5 after coalescing: the np.ndindex loop
]


@pytest.mark.parametrize("shape, other", BROADCAST_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_broadcast_kernels_cover_small_first_axes(shape, other, dtype, two_threads):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(dtype)
    y = rng.standard_normal(other).astype(dtype)
    assert x.size > elementwise.GRAIN
    product = elementwise.forward(RULES["mul"], (x, y), (), shape, np.dtype(dtype))
    np.testing.assert_array_equal(product, x * y)
    # A backward reading a broadcast operand, through sin's guarded loop (the sin/cos range check
    # that splits a parallel loop into tasks).
    g = np.broadcast_to(y, shape)
    (grad,) = elementwise.backward(RULES["sin"], (0,), {"g": g, "x": x}, ())
    np.testing.assert_allclose(grad, g * np.cos(x), rtol=2e-6 if dtype == np.float32 else 1e-14, atol=1e-6)
    x[(0,) * x.ndim] = 1e9  # beyond the vectorised cos's range: the exact pass reruns the loop
    (grad,) = elementwise.backward(RULES["sin"], (0,), {"g": g, "x": x}, ())
    np.testing.assert_allclose(grad, g * np.cos(x), rtol=2e-6 if dtype == np.float32 else 1e-14, atol=1e-6)


@pytest.mark.parametrize("shape, other", [((1, 3, 110, 110), (3, 1, 1)), ((1, 40000), (40000,))], ids=str)
def test_a_first_axis_of_one_runs_the_parallel_loop(shape, other, two_threads):
    # Before, the N-d loop split the first axis only, so a first axis of 1 ran serially.
    x, y = np.ones(shape, np.float32), np.ones(other, np.float32)
    elementwise.forward(RULES["mul"], (x, y), (), shape, np.dtype(np.float32))
    pattern, _, layout = elementwise._operands([x, y], shape, np.dtype(np.float32))
    assert ("mul", "forward", (), pattern, layout, True) in elementwise.KERNELS


@pytest.mark.parametrize("total", [0, 1, 2, 3, 5, 7, 31, 96, 1001])
@pytest.mark.parametrize("parts", [1, 2, 3, 4, 16])
def test_contiguous_runs_tile_the_work_and_differ_by_at_most_one(total, parts):
    runs = [_parallel.contiguous_run(total, parts, t) for t in range(parts)]
    assert runs[0][0] == 0 and runs[-1][1] == total
    assert all(stop == start for (_, stop), (start, _) in zip(runs, runs[1:]))
    lengths = [stop - start for start, stop in runs]
    assert max(lengths) - min(lengths) <= 1


# (B, M, K, N): batches the threads do not divide, odd rows, and a batch of single rows.
BATCHED_SHAPES = [(3, 37, 64, 50), (5, 64, 33, 64), (7, 1, 256, 256), (2, 41, 80, 40), (3, 128, 96, 72)]


@pytest.mark.parametrize("b_, m, k, n", BATCHED_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batched_products_cover_every_slice_and_row(b_, m, k, n, dtype, two_threads):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((b_, m, k)).astype(dtype)
    b = rng.standard_normal((b_, k, n)).astype(dtype)
    g = rng.standard_normal((b_, m, n)).astype(dtype)
    assert b_ * m * n * k >= _blas.PARALLEL_MIN_MACS  # the parallel batch loop runs
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    out = np.full((b_, m, n), np.nan, dtype)
    np.testing.assert_allclose(matmul.bgemm_nn(a, b, out), a @ b, **tol)
    out = np.full((b_, m, k), np.nan, dtype)
    np.testing.assert_allclose(matmul.bgemm_nt(g, b, out), g @ b.transpose(0, 2, 1), **tol)
    out = np.full((b_, k, n), np.nan, dtype)
    np.testing.assert_allclose(matmul.bgemm_tn(a, g, out), a.transpose(0, 2, 1) @ g, **tol)


def _dealt(total, size, parts):
    """Units per thread when blocks of `size` (the last one short) go to threads round-robin."""
    shares = [0] * parts
    for block, start in enumerate(range(0, total, size)):
        shares[block % parts] += min(size, total - start)
    return shares


@pytest.mark.parametrize("parts", [2, 3, 4])
@pytest.mark.parametrize("fit_images", [8, 28])
def test_batched_blocks_keep_the_busiest_thread_near_an_equal_share(parts, fit_images):
    positions = 16
    k = _conv_routing.TILE_ELEMENTS // (fit_images * positions)
    chosen = {n_img: _conv_routing.batched_images(n_img, k, positions, parts) for n_img in range(4 * parts, 160)}
    shares = {n_img: _dealt(n_img, images, parts) for n_img, images in chosen.items()}
    # Blocks of the largest size that fits left 64 images as 22 + 20 against 22 on 2 threads.
    assert [n for n, s in shares.items() if max(s) > 1.15 * n / parts + 1] == []
    assert all(_conv_routing.busiest_share(n, chosen[n], parts) == max(s) for n, s in shares.items())
