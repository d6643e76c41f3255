"""nn.utils.parametrizations (orthogonal, weight_norm, spectral_norm) against PyTorch's, float64:
the same weights give the same parametrized weight and the same gradient to the originals."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.autograd import gradcheck
from numdiff.nn.utils import parametrizations

torch = pytest.importorskip("torch")


def _twins(out_features: int, in_features: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    w, b = rng.standard_normal((out_features, in_features)), rng.standard_normal(out_features)
    ours = nn.Linear(in_features, out_features).double()
    theirs = torch.nn.Linear(in_features, out_features).double()
    with numdiff.no_grad():
        ours.weight.copy_(numdiff.tensor(w))
        ours.bias.copy_(numdiff.tensor(b))
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(w))
        theirs.bias.copy_(torch.tensor(b))
    return ours, theirs


def _backward_both(ours, theirs, in_features: int):
    x = np.random.default_rng(1).standard_normal((3, in_features))
    ours(numdiff.tensor(x)).sin().sum().backward()
    theirs(torch.tensor(x)).sin().sum().backward()


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_orthogonal_matches_pytorch(orthogonal_map, shape):
    if orthogonal_map != "householder" and shape[0] != shape[1]:
        pytest.skip("PyTorch's default for a non-square weight is householder; both maps are tested square")
    ours, theirs = _twins(*shape)
    parametrizations.orthogonal(ours, orthogonal_map=orthogonal_map)
    torch.nn.utils.parametrizations.orthogonal(theirs, orthogonal_map=orthogonal_map)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), atol=1e-10)
    if shape[0] != shape[1]:
        return  # the gradient then depends on the random columns that complete the base: see below
    _backward_both(ours, theirs, shape[1])
    np.testing.assert_allclose(
        ours.parametrizations.weight.original.grad.numpy(),
        theirs.parametrizations.weight.original.grad.numpy(), atol=1e-9,
    )


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley"])
def test_orthogonal_on_a_non_square_weight_has_orthonormal_columns(orthogonal_map):
    layer = parametrizations.orthogonal(nn.Linear(3, 5).double(), orthogonal_map=orthogonal_map)
    w = layer.weight.detach().numpy()
    np.testing.assert_allclose(w.T @ w, np.eye(3), atol=1e-12)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_map_gradient_matches_central_differences(orthogonal_map):
    layer = parametrizations.orthogonal(nn.Linear(3, 5).double(), orthogonal_map=orthogonal_map)
    mapping = layer.parametrizations.weight[0]
    a = numdiff.randn(5, 3, dtype=numdiff.float64, requires_grad=True)
    assert gradcheck(mapping, (a,))


def test_orthogonal_assignment_keeps_the_assigned_orthogonal_matrix():
    layer = parametrizations.orthogonal(nn.Linear(4, 4).double())
    q = np.linalg.qr(np.random.default_rng(2).standard_normal((4, 4)))[0]
    layer.weight = numdiff.tensor(q)
    np.testing.assert_allclose(layer.weight.detach().numpy(), q * np.sign(np.diag(np.linalg.qr(q)[1])), atol=1e-12)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_pytorch(dim):
    ours, theirs = _twins(4, 3)
    parametrizations.weight_norm(ours, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
    for i in (0, 1):
        np.testing.assert_allclose(
            getattr(ours.parametrizations.weight, f"original{i}").detach().numpy(),
            getattr(theirs.parametrizations.weight, f"original{i}").detach().numpy(), atol=1e-12,
        )
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), atol=1e-12)
    _backward_both(ours, theirs, 3)
    for i in (0, 1):
        np.testing.assert_allclose(
            getattr(ours.parametrizations.weight, f"original{i}").grad.numpy(),
            getattr(theirs.parametrizations.weight, f"original{i}").grad.numpy(), atol=1e-10,
        )


def test_spectral_norm_divides_by_the_largest_singular_value():
    # A weight whose two largest singular values are apart (5 and 3): 30 power iterations then
    # converge to (3/5)^60, whatever the random start vector; random weights made the test depend
    # on the global generator's state, and so on which tests ran before it.
    rng = np.random.default_rng(0)
    left, _ = np.linalg.qr(rng.standard_normal((8, 6)))
    right, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    linear = nn.Linear(6, 8).double()
    with numdiff.no_grad():
        linear.weight.copy_(numdiff.tensor((left * [5.0, 3.0, 2.0, 1.0, 0.5, 0.1]) @ right.T))
    layer = parametrizations.spectral_norm(linear, n_power_iterations=30)
    original = layer.parametrizations.weight.original.detach().numpy()
    sigma = np.linalg.svd(original, compute_uv=False)[0]
    np.testing.assert_allclose(layer.weight.detach().numpy(), original / sigma, rtol=1e-6)
    layer.eval()  # no power iteration: the same u, v give the same weight twice
    np.testing.assert_array_equal(layer.weight.detach().numpy(), layer.weight.detach().numpy())
    layer(numdiff.randn(2, 6, dtype=numdiff.float64)).sum().backward()
    assert layer.parametrizations.weight.original.grad.shape == (8, 6)


def test_spectral_norm_of_a_transposed_convolution_uses_dim_1():
    conv = parametrizations.spectral_norm(nn.ConvTranspose2d(3, 5, 2))
    assert conv.parametrizations.weight[0].dim == 1


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match="orthogonal_map must be one of"):
        parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="got a tensor of 1 dims"):
        parametrizations.orthogonal(nn.Linear(3, 3), name="bias")
    with pytest.raises(ValueError, match="n_power_iterations must be positive, got 0"):
        parametrizations.spectral_norm(nn.Linear(3, 3), n_power_iterations=0)
    with pytest.raises(IndexError, match="dim=4"):
        parametrizations.spectral_norm(nn.Linear(3, 3), dim=4)
    with pytest.raises(ValueError, match="no parameter or buffer named 'kernel'"):
        parametrizations.spectral_norm(nn.Linear(3, 3), name="kernel")
