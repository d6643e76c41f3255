"""Hook-style nn.utils.weight_norm and spectral_norm, their removal, fuse_conv_bn_eval and skip_init,
against torch: the same outputs, state_dict keys and gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import numdiff
import numdiff.nn as nn

RNG = np.random.default_rng(3)


def _linear_pair():
    ours, theirs = nn.Linear(4, 3), torch.nn.Linear(4, 3)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.detach().numpy()))
        theirs.bias.copy_(torch.tensor(ours.bias.detach().numpy()))
    return ours, theirs


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(dim):
    ours, theirs = _linear_pair()
    nn.utils.weight_norm(ours, dim=dim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nn.utils.weight_norm(theirs, dim=dim)
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    mine, their = ours(numdiff.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(mine.detach().numpy(), their.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    mine.pow(2).sum().backward()
    their.pow(2).sum().backward()
    for name in ("weight_g", "weight_v"):
        np.testing.assert_allclose(getattr(ours, name).grad.numpy(), getattr(theirs, name).grad.numpy(), rtol=1e-4, atol=1e-6)
    nn.utils.remove_weight_norm(ours)
    assert sorted(ours.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(ours(numdiff.tensor(x)).detach().numpy(), their.detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="remove_weight_norm"):
        nn.utils.remove_weight_norm(ours)


def test_spectral_norm_reaches_unit_norm_and_trains():
    layer = nn.utils.spectral_norm(nn.Linear(6, 5))
    assert sorted(layer.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    for _ in range(30):
        layer(numdiff.randn(2, 6))
    assert np.linalg.svd(layer.weight.detach().numpy(), compute_uv=False)[0] == pytest.approx(1.0, rel=1e-3)
    layer(numdiff.randn(3, 6)).sum().backward()
    assert layer.weight_orig.grad is not None
    layer.eval()
    before = layer.weight_u.clone()
    layer(numdiff.randn(1, 6))
    assert numdiff.equal(before, layer.weight_u)  # no power iteration in eval mode
    nn.utils.remove_spectral_norm(layer)
    assert sorted(layer.state_dict()) == ["bias", "weight"]
    with pytest.raises(ValueError, match="spectral_norm: expected n_power_iterations"):
        nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval_matches_the_pair(transpose):
    conv = (nn.ConvTranspose2d(3, 4, 3) if transpose else nn.Conv2d(3, 4, 3)).eval()
    bn = nn.BatchNorm2d(4).eval()
    with numdiff.no_grad():
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.normal_()
    x = numdiff.randn(2, 3, 6, 6)
    fused = nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="eval mode"):
        nn.utils.fuse_conv_bn_eval(conv.train(), bn)


def test_skip_init_builds_the_module_without_initialising_it():
    layer = nn.utils.skip_init(nn.Linear, 3, 2)
    assert tuple(layer.weight.shape) == (2, 3) and layer.weight.device == numdiff.device("cpu")
    with pytest.raises(TypeError, match="skip_init"):
        nn.utils.skip_init(int, 3)
