"""F.affine_grid and F.grid_sample (spatial transformer networks), 4-D and 5-D: forward against PyTorch
for every mode, padding mode and align_corners, float64 gradient checks to input, grid and theta,
refusals."""

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf
from numdiff.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_of_an_affine_grid_matches_pytorch(mode, padding_mode, align_corners):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 4))
    theta = rng.standard_normal((2, 2, 3)) * 0.7  # reaches outside the image, so padding matters
    grid_t = torch.nn.functional.affine_grid(torch.tensor(theta), (2, 3, 6, 7), align_corners=align_corners)
    grid_n = nf.affine_grid(numdiff.tensor(theta), (2, 3, 6, 7), align_corners=align_corners)
    np.testing.assert_allclose(grid_n.numpy(), grid_t.numpy(), rtol=1e-12, atol=1e-12)
    expected = torch.nn.functional.grid_sample(torch.tensor(x), grid_t, mode=mode, padding_mode=padding_mode,
                                               align_corners=align_corners)
    ours = nf.grid_sample(numdiff.tensor(x), grid_n, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("padding_mode", ["zeros", "reflection"])
def test_gradients_reach_input_grid_and_theta_in_float64(padding_mode):
    rng = np.random.default_rng(1)
    x = numdiff.tensor(rng.standard_normal((1, 2, 4, 5)), requires_grad=True)
    grid = numdiff.tensor(rng.uniform(-1.2, 1.2, (1, 3, 3, 2)), requires_grad=True)
    assert gradcheck(lambda a, g: nf.grid_sample(a, g, padding_mode=padding_mode, align_corners=False), (x, grid))
    theta = numdiff.tensor(rng.standard_normal((1, 2, 3)) * 0.5, requires_grad=True)
    assert gradcheck(lambda a, t: nf.grid_sample(a, nf.affine_grid(t, (1, 2, 3, 3), align_corners=True),
                                                 align_corners=True), (x, theta))


def test_bad_arguments_are_refused_naming_the_op():
    x, grid = numdiff.ones(1, 1, 2, 2), numdiff.zeros(1, 2, 2, 2)
    with pytest.raises(ValueError, match="grid_sample: mode must be one of"):
        nf.grid_sample(x, grid, mode="cubic")
    with pytest.raises(ValueError, match="grid_sample: padding_mode must be one of"):
        nf.grid_sample(x, grid, padding_mode="wrap")
    with pytest.raises(ValueError, match=r"grid_sample: expected a grid of shape \(1, H_out, W_out, 2\)"):
        nf.grid_sample(x, numdiff.zeros(1, 2, 2, 3))
    with pytest.raises(NotImplementedError, match=r"only 4-D \(N, C, H, W\) and 5-D \(N, C, D, H, W\) inputs"):
        nf.grid_sample(numdiff.ones(1, 1, 2, 2, 2, 2), numdiff.zeros(1, 2, 2, 2, 2, 4))
    with pytest.raises(ValueError, match=r"grid_sample: expected a grid of shape \(1, D_out, H_out, W_out, 3\)"):
        nf.grid_sample(numdiff.ones(1, 1, 2, 2, 2), numdiff.zeros(1, 2, 2, 2))
    with pytest.raises(ValueError, match=r"affine_grid: expected a floating theta of shape \(1, 3, 4\) for size"):
        nf.affine_grid(numdiff.zeros(1, 2, 3), (1, 1, 2, 4, 4))
    with pytest.raises(NotImplementedError, match="affine_grid: only 4-D"):
        nf.affine_grid(numdiff.zeros(1, 2, 3), (1, 4, 4))
    with pytest.raises(ValueError, match=r"affine_grid: expected a floating theta of shape \(2, 2, 3\)"):
        nf.affine_grid(numdiff.zeros(1, 2, 3), (2, 1, 4, 4))


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_5d_grid_sample_of_an_affine_grid_matches_pytorch(mode, padding_mode, align_corners, dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4, 5, 3)).astype(dtype)
    theta = (rng.standard_normal((2, 3, 4)) * 0.7).astype(dtype)
    grid_t = torch.nn.functional.affine_grid(torch.tensor(theta), (2, 3, 3, 6, 4), align_corners=align_corners)
    grid_n = nf.affine_grid(numdiff.tensor(theta), (2, 3, 3, 6, 4), align_corners=align_corners)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grid_n.numpy(), grid_t.numpy(), **tol)
    expected = torch.nn.functional.grid_sample(torch.tensor(x), grid_t, mode=mode, padding_mode=padding_mode,
                                               align_corners=align_corners)
    ours = nf.grid_sample(numdiff.tensor(x), grid_n, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    assert ours.dtype == numdiff.tensor(x).dtype
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), **tol)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_5d_gradients_to_input_and_grid_match_pytorch(padding_mode):
    rng = np.random.default_rng(3)
    x0, g0 = rng.standard_normal((2, 2, 3, 4, 5)), rng.uniform(-1.3, 1.3, (2, 2, 3, 2, 3))
    x, grid = numdiff.tensor(x0, requires_grad=True), numdiff.tensor(g0, requires_grad=True)
    tx, tgrid = torch.tensor(x0, requires_grad=True), torch.tensor(g0, requires_grad=True)
    upstream = rng.standard_normal((2, 2, 2, 3, 2))
    nf.grid_sample(x, grid, padding_mode=padding_mode, align_corners=False).backward(numdiff.tensor(upstream))
    torch.nn.functional.grid_sample(tx, tgrid, padding_mode=padding_mode, align_corners=False).backward(
        torch.tensor(upstream))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grid.grad.numpy(), tgrid.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_5d_gradcheck_and_gradgradcheck_to_input_grid_and_theta():
    rng = np.random.default_rng(4)
    x = numdiff.tensor(rng.standard_normal((1, 2, 3, 3, 2)), requires_grad=True)
    grid = numdiff.tensor(rng.uniform(-1.2, 1.2, (1, 2, 2, 1, 3)), requires_grad=True)
    def sample(a, g):
        return nf.grid_sample(a, g, padding_mode="reflection", align_corners=True)

    assert gradcheck(sample, (x, grid))
    assert gradgradcheck(sample, (x, grid))
    theta = numdiff.tensor(rng.standard_normal((1, 3, 4)) * 0.5, requires_grad=True)
    assert gradcheck(lambda a, t: nf.grid_sample(a, nf.affine_grid(t, (1, 2, 2, 2, 2), align_corners=False),
                                                 align_corners=False), (x, theta))


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("size", [(1, 2, 4, 5), (1, 2, 3, 4, 2)])
def test_theta_gradient_at_an_identity_grid_matches_pytorch(size, padding_mode, align_corners):
    """An identity theta puts every grid point on a pixel, the outermost ones on the border, where
    PyTorch's clamp and reflection give no gradient (a spatial transformer's first step)."""
    dims = len(size) - 2
    rng = np.random.default_rng(5)
    x0, upstream = rng.standard_normal(size), rng.standard_normal(size)
    theta0 = np.eye(dims, dims + 1)[None]
    grads = []
    for lib, functional in ((numdiff, nf), (torch, torch.nn.functional)):
        x, theta = lib.tensor(x0, requires_grad=True), lib.tensor(theta0, requires_grad=True)
        grid = functional.affine_grid(theta, size, align_corners=align_corners)
        out = functional.grid_sample(x, grid, padding_mode=padding_mode, align_corners=align_corners)
        out.backward(lib.tensor(upstream))
        grads.append((x.grad.numpy(), theta.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-10, atol=1e-12)
