"""interpolate with antialias=True (bilinear and bicubic): against PyTorch's resize for
down- and upscales, align_corners, recompute_scale_factor and both float dtypes, forward and
input gradient; central differences in float64; the other modes refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd.gradcheck import gradcheck

torch = pytest.importorskip("torch")

RESIZES = [
    ((2, 3, 17, 13), {"size": (5, 4)}),
    ((1, 2, 8, 8), {"scale_factor": 0.3}),
    ((1, 1, 6, 9), {"size": (11, 4)}),
    ((1, 2, 10, 10), {"size": (3, 3), "align_corners": True}),
    ((1, 1, 7, 5), {"scale_factor": (0.5, 1.7)}),
    ((1, 1, 9, 9), {"scale_factor": 0.45, "recompute_scale_factor": True}),
    ((1, 1, 5, 5), {"size": (1, 1)}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize(("shape", "kwargs"), RESIZES)
def test_antialiased_resize_matches_torch(shape, kwargs, mode, dtype):
    x = np.random.default_rng(0).normal(size=shape).astype(dtype)
    results = []
    for lib in (torch, numdiff):
        t = lib.tensor(x, requires_grad=True)
        out = lib.nn.functional.interpolate(t, mode=mode, antialias=True, **kwargs)
        (out * out).sum().backward()
        results.append((out.detach().numpy(), t.grad.numpy()))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=tol, atol=tol)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=tol, atol=10 * tol)


def test_antialiased_resize_of_bfloat16_is_the_float32_one_rounded():
    x = numdiff.tensor(np.random.default_rng(1).normal(size=(1, 2, 9, 9)).astype(np.float32)).to(numdiff.bfloat16)
    out = numdiff.nn.functional.interpolate(x, size=(4, 4), mode="bilinear", antialias=True)
    wide = numdiff.nn.functional.interpolate(x.float(), size=(4, 4), mode="bilinear", antialias=True)
    assert out.dtype is numdiff.bfloat16
    np.testing.assert_array_equal(out.float().numpy(), wide.to(numdiff.bfloat16).float().numpy())


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialiased_resize_gradient_matches_central_differences(mode):
    x = numdiff.tensor(np.random.default_rng(2).normal(size=(1, 2, 7, 6)), requires_grad=True)
    assert gradcheck(lambda t: numdiff.nn.functional.interpolate(t, size=(3, 4), mode=mode, antialias=True), (x,))


def test_antialias_with_another_mode_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"interpolate: antialias=True needs mode 'bilinear' or 'bicubic' \(a 4-D input\), got mode 'nearest'"):
        numdiff.nn.functional.interpolate(numdiff.ones(1, 1, 4, 4), size=(2, 2), mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="mode 'bilinear' needs a 4-D input"):
        numdiff.nn.functional.interpolate(numdiff.ones(1, 1, 4), size=2, mode="bilinear", antialias=True)
