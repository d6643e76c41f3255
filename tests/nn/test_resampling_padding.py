"""interpolate / Upsample, pixel_shuffle / pixel_unshuffle and the padding layers: PyTorch's values
and reprs, float64 gradients, and clear errors for bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf
from numdiff.nn.modules import padding

torch = pytest.importorskip("torch")
tf = torch.nn.functional

RNG = np.random.default_rng(0)
SHAPES = {"linear": (2, 3, 7), "bilinear": (2, 3, 5, 7), "bicubic": (2, 3, 5, 7), "trilinear": (1, 2, 3, 4, 5),
          "nearest": (2, 3, 5, 7), "nearest-exact": (2, 3, 5, 7), "area": (2, 3, 5, 7)}  # fmt: skip


def _options(mode: str, dims: int):
    sizes = [dict(size=tuple([3, 11, 4][:dims])), dict(size=tuple([13, 2, 9][:dims])), dict(size=1)]
    if mode == "area":
        return sizes
    scales = [dict(scale_factor=f) for f in (2, 1.7, 0.5, tuple([2.3, 0.6, 3.0][:dims]))]
    return sizes + scales + [dict(option, recompute_scale_factor=True) for option in scales]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", sorted(SHAPES))
def test_interpolate_matches_torch_for_every_size_scale_and_corner_option(mode, dtype):
    x = RNG.standard_normal(SHAPES[mode]).astype(dtype)
    corners = [None, True, False] if mode in ("linear", "bilinear", "bicubic", "trilinear") else [None]
    tol = 2e-6 if dtype == np.float32 else 1e-12
    if mode == "bicubic" and dtype == np.float32:
        tol = 1e-5  # 16 taps with negative weights: float32 rounding differs from PyTorch's by a few ulp of the taps
    for option in _options(mode, x.ndim - 2):
        for align_corners in corners:
            kwargs = dict(option, mode=mode, align_corners=align_corners)
            expected = tf.interpolate(torch.tensor(x), **kwargs).numpy()
            np.testing.assert_allclose(nf.interpolate(numdiff.tensor(x), **kwargs).numpy(), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "nearest-exact"])
def test_interpolate_gradients_in_float64(mode):
    x = numdiff.tensor(RNG.standard_normal((1, 2, 3, 4)), requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: nf.interpolate(t, size=(5, 3), mode=mode), (x,))
    assert numdiff.autograd.gradcheck(lambda t: nf.interpolate(t, scale_factor=1.5, mode=mode), (x,))


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize(("shape", "option"), [
    ((2, 3, 5, 7), dict(scale_factor=2)), ((2, 3, 5, 7), dict(size=(15, 21))), ((2, 3, 4, 5), dict(scale_factor=(3, 1))),
    ((2, 3, 7), dict(scale_factor=4)), ((1, 2, 3, 2, 4), dict(scale_factor=2)), ((1, 2, 3, 3), dict(size=(3, 6))),
])  # fmt: skip
def test_integer_nearest_upscale_is_a_broadcast_with_torchs_values_and_gradients(mode, shape, option):
    # Each input element repeated r times along each dim: the last dim by axis_blend, the others
    # by one broadcast copy whose gradient sums the repeats, not an index_select per dim with a
    # scatter-add gradient (np.add.at along an inner axis, 11 ms for style_transfer's upsample).
    x = RNG.standard_normal(shape)
    ours = numdiff.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    y = nf.interpolate(ours, mode=mode, **option)
    expected = tf.interpolate(theirs, mode=mode, **option)
    node, nodes = y.grad_fn, []
    while node is not None:
        nodes.append(repr(node))
        node = node.next_functions[0][0] if node.next_functions else None
    assert set(nodes) <= {"<ReshapeBackward>", "<ExpandBackward>", "<AxisBlendBackward>", "<AccumulateGrad>"}, nodes
    assert ("<AxisBlendBackward>" in nodes) == (y.shape[-1] > shape[-1])
    np.testing.assert_array_equal(y.detach().numpy(), expected.detach().numpy())
    g = RNG.standard_normal(tuple(expected.shape))
    y.backward(numdiff.tensor(g))
    expected.backward(torch.tensor(g))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-12)
    small = numdiff.tensor(RNG.standard_normal((1, 2) + (2,) * (len(shape) - 2)), requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: nf.interpolate(t, scale_factor=2, mode=mode), (small,))
    assert numdiff.autograd.gradgradcheck(lambda t: nf.interpolate(t, scale_factor=2, mode=mode), (small,))


def test_upsample_layers_match_torch():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    for ours, theirs in [
        (numdiff.nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2)),
        (numdiff.nn.Upsample(size=(3, 7), mode="bilinear"), torch.nn.Upsample(size=(3, 7), mode="bilinear")),
        (numdiff.nn.UpsamplingNearest2d(scale_factor=3), torch.nn.UpsamplingNearest2d(scale_factor=3)),
        (numdiff.nn.UpsamplingBilinear2d(size=6), torch.nn.UpsamplingBilinear2d(size=6)),
    ]:
        assert repr(ours) == repr(theirs)
        np.testing.assert_allclose(ours(numdiff.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(), rtol=2e-6, atol=2e-6)


def test_pixel_shuffle_matches_torch_and_unshuffle_inverts_it():
    x = RNG.standard_normal((2, 8, 3, 5))
    shuffled = nf.pixel_shuffle(numdiff.tensor(x), 2)
    np.testing.assert_array_equal(shuffled.numpy(), tf.pixel_shuffle(torch.tensor(x), 2).numpy())
    np.testing.assert_array_equal(nf.pixel_unshuffle(shuffled, 2).numpy(), x)
    y = RNG.standard_normal((3, 2, 6, 9))
    np.testing.assert_array_equal(numdiff.nn.PixelUnshuffle(3)(numdiff.tensor(y)).numpy(), tf.pixel_unshuffle(torch.tensor(y), 3).numpy())
    assert repr(numdiff.nn.PixelShuffle(2)) == repr(torch.nn.PixelShuffle(2))
    leaf = numdiff.tensor(RNG.standard_normal((1, 4, 2, 3)), requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: nf.pixel_shuffle(t, 2) * numdiff.arange(24.0).reshape(1, 1, 4, 6), (leaf,))


@pytest.mark.parametrize("name", padding.__all__)
def test_padding_layers_match_torch(name):
    dims = int(name[-2])
    x = RNG.standard_normal((1, 2, 5, 6, 7)[: 2 + dims]).astype(np.float32)
    arguments = (2, 1.5) if name.startswith("Constant") else (2,)
    ours, theirs = getattr(numdiff.nn, name)(*arguments), getattr(torch.nn, name)(*arguments)
    assert repr(ours) == repr(theirs)
    np.testing.assert_array_equal(ours(numdiff.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())
    asymmetric = (1, 0, 2, 1, 0, 2)[: 2 * dims]
    arguments = (asymmetric, 0.5) if name.startswith("Constant") else (asymmetric,)
    ours, theirs = getattr(numdiff.nn, name)(*arguments), getattr(torch.nn, name)(*arguments)
    np.testing.assert_array_equal(ours(numdiff.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())


def test_resampling_refuses_bad_arguments_naming_the_values():
    x = numdiff.ones(1, 2, 4, 4)
    with pytest.raises(ValueError, match="interpolate: give exactly one of size and scale_factor"):
        nf.interpolate(x)
    with pytest.raises(ValueError, match="interpolate: mode must be one of .*bicubic.*, got 'lanczos'"):
        nf.interpolate(x, size=3, mode="lanczos")
    with pytest.raises(ValueError, match=r"interpolate: mode 'linear' needs a 3-D input, got shape \(1, 2, 4, 4\)"):
        nf.interpolate(x, size=3, mode="linear")
    with pytest.raises(ValueError, match="interpolate: align_corners can only be set with the linear and cubic modes"):
        nf.interpolate(x, size=3, align_corners=True)
    with pytest.raises(ValueError, match=r"interpolate: size must have 2 entries for a 4-D input, got \(3, 3, 3\)"):
        nf.interpolate(x, size=(3, 3, 3))
    with pytest.raises(ValueError, match="interpolate: scale_factor must hold positive floats, got -2"):
        nf.interpolate(x, scale_factor=-2)
    with pytest.raises(TypeError, match="interpolate: expected a floating point input"):
        nf.interpolate(numdiff.ones(1, 1, 2, 2, dtype=numdiff.int64), size=3)
    with pytest.raises(ValueError, match=r"pixel_shuffle: the channel dim \(3, input of shape \(1, 3, 2, 2\)\) must be divisible by upscale_factor \*\* 2 = 4"):
        nf.pixel_shuffle(numdiff.ones(1, 3, 2, 2), 2)
    with pytest.raises(ValueError, match=r"pixel_unshuffle: height and width \(5, 4"):
        nf.pixel_unshuffle(numdiff.ones(1, 1, 5, 4), 2)
    with pytest.raises(ValueError, match=r"ZeroPad2d: padding must be an int or 4 ints, got \(1, 2\)"):
        numdiff.nn.ZeroPad2d((1, 2))
