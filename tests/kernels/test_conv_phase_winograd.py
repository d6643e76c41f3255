"""The stride-2 4x4 forward as Winograd F(2x2, 2x2) over the input's phases
(numdiff.kernels._conv_phase_winograd) against float64 NumPy, compiled against eager, and its rule.

The `phase` fixture lowers the rule's bounds (numdiff.kernels._conv_routing_phase) so small shapes
take the route, and every check first asserts that the plan picked the route's core, so a routing
change cannot turn these into im2col tests unnoticed.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.kernels import _conv_phase_winograd, _conv_routing_phase, conv
from numdiff.kernels._parallel import always_parallel
from tests.kernels import kernel_reference as ref

CORE = _conv_phase_winograd.phase_winograd_forward_core

# float32 error bound, in units of float32's epsilon times the same convolution of |x| and |w|. A
# direct sum's worst case is about the number of terms (16*C here); the transforms add at most 3
# terms with factors +-1 on each side. 16 leaves room and still catches a wrong or missing term,
# which costs O(1) of the bound.
F32_ULPS = 16.0

# (N, C, H, W, Co, padding (t, b, l, r))
CASES = [
    (2, 3, 8, 8, 4, (1, 1, 1, 1)),  # the dcgan layers' geometry: even output, one pixel of padding
    (2, 3, 9, 7, 5, (1, 1, 1, 1)),  # odd sizes: a last tile row and column of one output each
    (3, 4, 10, 11, 6, (0, 0, 0, 0)),  # no padding
    (2, 2, 8, 9, 3, (3, 2, 0, 1)),  # asymmetric pads, pads past the filter's half
    (2, 2, 7, 7, 3, (1, -1, 2, -1)),  # negative bottom and right pads crop
    (1, 2, 4, 4, 2, (0, 0, 0, 0)),  # 1x1 output: one tile, three spare outputs
    (5, 3, 6, 5, 2, (1, 1, 1, 1)),  # several images a block, the last block short
]


@pytest.fixture
def phase(monkeypatch):
    monkeypatch.setattr(_conv_routing_phase, "PHASE_WINOGRAD_MIN_CHANNELS", 1)
    monkeypatch.setattr(_conv_routing_phase, "PHASE_WINOGRAD_MIN_OUT_CHANNELS", 1)
    monkeypatch.setattr(_conv_routing_phase, "PHASE_WINOGRAD_MIN_TILES", 1)
    monkeypatch.setattr(_conv_routing_phase, "PHASE_WINOGRAD_MAX_SPARE", 3.0)


def _shapes(case):
    n, c, h, w, co, padding = case
    oh = conv.conv_output_size(h, 4, 2, *padding[:2], 1)
    ow = conv.conv_output_size(w, 4, 2, *padding[2:], 1)
    return (n, c, h, w), (co, c, 4, 4), (n, co, oh, ow)


def _check(case, dtype, rng, bias=True):
    x_shape, w_shape, out_shape = _shapes(case)
    padding = case[-1]
    core, _ = conv.conv2d_plan("forward", x_shape, w_shape, out_shape, (2, 2), padding, (1, 1), 1)
    assert core in CORE
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype) if bias else None
    out = conv.conv2d_forward(x, w, b, np.full(out_shape, np.nan, dtype), (2, 2), padding)
    want = ref.conv2d(x.astype(np.float64), w.astype(np.float64), None if b is None else b.astype(np.float64),
                      (2, 2), padding, (1, 1), 1)  # fmt: skip
    if dtype == np.float64:
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
        return
    absb = None if b is None else np.abs(b).astype(np.float64)
    bound = ref.conv2d(
        np.abs(x).astype(np.float64), np.abs(w).astype(np.float64), absb, (2, 2), padding, (1, 1), 1
    )
    ulps = np.abs(out.astype(np.float64) - want) / (np.finfo(np.float32).eps * bound + 1e-300)
    assert ulps.max() <= F32_ULPS, float(ulps.max())


@pytest.mark.parametrize("case", CASES)
def test_phase_winograd_forward_matches_reference(case, dtype, rng, phase):
    _check(case, dtype, rng)


@pytest.mark.parametrize("case", CASES[:2] + CASES[-1:])
def test_phase_winograd_parallel_build_without_bias_matches_reference(case, rng, phase):
    with always_parallel():
        _check(case, np.float64, rng, bias=False)


def test_phase_winograd_default_route_matches_reference(dtype, rng):
    # The dcgan discriminator's second layer at a smaller batch: within the rule's own bounds.
    _check((8, 32, 16, 16, 64, (1, 1, 1, 1)), dtype, rng)


def test_phase_winograd_gradcheck_and_compiled_step_match_eager(phase):
    rng = np.random.default_rng(3)
    x = numdiff.tensor(rng.standard_normal((2, 2, 6, 7)), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal((3, 2, 4, 4)), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal(3), requires_grad=True)
    assert (
        conv.conv2d_plan("forward", (2, 2, 6, 7), (3, 2, 4, 4), (2, 3, 3, 3), (2, 2), (1,) * 4, (1, 1), 1)[0]
        in CORE
    )

    def loss(x, w, b):
        return (numdiff.nn.functional.conv2d(x, w, b, stride=2, padding=1) ** 2).sum()

    assert numdiff.autograd.gradcheck(lambda x, w, b: numdiff.nn.functional.conv2d(x, w, b, 2, 1), (x, w, b))
    eager = loss(x, w, b)
    eager.backward()
    want = [t.grad.numpy().copy() for t in (x, w, b)]
    for t in (x, w, b):
        t.grad = None
    compiled = numdiff.compile(loss)(x, w, b)
    compiled.backward()
    assert np.array_equal(
        compiled.detach().numpy(), eager.detach().numpy()
    )  # one core for both: bit-identical
    for t, expected in zip((x, w, b), want):
        assert np.array_equal(t.grad.numpy(), expected)


@pytest.mark.parametrize(
    "shape, stride, groups, dilation",
    [
        ((8, 32, 16, 16, 64), (1, 1), 1, (1, 1)),  # stride 1
        ((8, 32, 16, 16, 64), (2, 2), 2, (1, 1)),  # groups
        ((8, 32, 16, 16, 64), (2, 2), 1, (2, 2)),  # dilation
        ((8, 16, 16, 16, 64), (2, 2), 1, (1, 1)),  # few input channels
        ((8, 32, 16, 16, 8), (2, 2), 1, (1, 1)),  # few output channels
        ((1, 32, 8, 8, 64), (2, 2), 1, (1, 1)),  # few tiles
        ((32, 32, 10, 10, 64), (2, 2), 1, (1, 1)),  # 5x5 output: too many spare outputs
    ],
)
def test_phase_winograd_rule_leaves_other_convolutions_to_other_routes(shape, stride, groups, dilation):
    n, c, h, w, co = shape
    oh = conv.conv_output_size(h, 4, stride[0], 1, 1, dilation[0])
    plan = conv.conv2d_plan(
        "forward", (n, c, h, w), (co, c // groups, 4, 4), (n, co, oh, oh), stride, (1,) * 4, dilation, groups
    )
    assert plan[0] not in CORE
    for kind in ("backward_input", "backward_weight"):  # the route is a forward's only
        plan = conv.conv2d_plan(
            kind, (8, 32, 16, 16), (64, 32, 4, 4), (8, 64, 8, 8), (2, 2), (1,) * 4, (1, 1), 1
        )
        assert plan[0] not in CORE


@pytest.mark.parametrize("parts", [1, 2, 3, 8])
@pytest.mark.parametrize("n_img", [1, 2, 5, 32, 33])
def test_phase_winograd_blocks_cover_the_batch_in_equal_blocks_within_budget(parts, n_img):
    images = _conv_routing_phase.phase_winograd_images(n_img, 32, 64, 8, 8, parts)
    assert 1 <= images <= -(-n_img // parts)
    if images > 1:
        assert 9 * (4 * 32 + 64) * 16 * images <= _conv_routing_phase.PHASE_WINOGRAD_BLOCK_ELEMENTS
    blocks = -(-n_img // images)
    assert blocks * images - n_img < blocks


def test_phase_winograd_bad_output_shape_names_the_op_before_the_kernel(phase):
    x, w = np.ones((2, 2, 8, 8)), np.ones((3, 2, 4, 4))
    out = np.full((2, 3, 5, 4), -7.0)
    with pytest.raises(
        ValueError, match=r"conv2d_forward: output must have shape \(2, 3, 4, 4\).*got \(2, 3, 5, 4\)"
    ):
        conv.conv2d_forward(x, w, None, out, (2, 2), (1,) * 4)
    assert (out == -7.0).all()  # raised before any kernel wrote
