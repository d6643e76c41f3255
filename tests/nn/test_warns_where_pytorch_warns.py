"""Inputs that PyTorch accepts with a warning are accepted with a warning here too, with the same
result (programs such as pytorch/examples' mnist_rnn call Dropout2d on a 2-D input)."""

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf


@pytest.mark.parametrize("op", [nf.dropout2d, nf.dropout3d])
def test_channel_dropout_of_an_unexpected_rank_warns_and_drops_along_dim_0(op):
    numdiff.manual_seed(0)
    with pytest.warns(UserWarning, match=f"{op.__name__}: received a 2-D input of shape \\(64, 8\\)"):
        out = op(numdiff.ones(64, 8), 0.5).numpy()
    assert (out.std(1) == 0).all()  # PyTorch unsqueezes to (1, 64, 8): each row is one channel
    assert set(np.unique(out)) == {np.float32(0.0), np.float32(2.0)}
    layer = numdiff.nn.Dropout2d(0.5)
    with pytest.warns(UserWarning):
        assert layer(numdiff.ones(3, 4)).shape == (3, 4)


def test_dropout1d_of_an_unexpected_rank_still_raises_as_in_pytorch():
    with pytest.raises(ValueError, match="dropout1d: expected a 2-D"):
        nf.dropout1d(numdiff.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match="dropout2d: expected a 3-D"):
        nf.dropout2d(numdiff.tensor(1.0))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (2, 3, 4, 5)])
def test_softmax_family_without_dim_warns_and_picks_pytorchs_dim(name, shape):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    with pytest.warns(UserWarning, match=f"{name}: implicit dimension choice is deprecated"):
        ours = getattr(nf, name)(numdiff.tensor(x))
    with pytest.warns(UserWarning):
        expected = getattr(torch.nn.functional, name)(torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_deprecated_upsample_names_match_interpolate_as_pytorch_defines_them():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((1, 2, 3, 3)).astype(np.float32)
    for name in ("upsample_bilinear", "upsample_nearest"):
        with pytest.warns(UserWarning, match=f"{name} is deprecated"):
            ours = getattr(nf, name)(numdiff.tensor(x), scale_factor=2)
        with pytest.warns(UserWarning):
            expected = getattr(torch.nn.functional, name)(torch.tensor(x), scale_factor=2)
        np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_deprecated_clip_grad_norm_and_range_warn_and_work():
    layer = numdiff.nn.Linear(3, 3)
    layer(numdiff.ones(2, 3)).sum().mul(100).backward()
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        total = numdiff.nn.utils.clip_grad_norm(layer.parameters(), 1.0)
    assert float(total) > 1.0
    clipped = numdiff.nn.utils.parameters_to_vector([p.grad for p in layer.parameters()])
    assert abs(float(clipped.norm()) - 1.0) < 1e-3
    with pytest.warns(UserWarning, match="numdiff.range is deprecated"):
        values = numdiff.range(0, 1, 0.25)
    np.testing.assert_allclose(values.numpy(), [0, 0.25, 0.5, 0.75, 1.0])
    assert values.dtype is numdiff.float32
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="range: step must be nonzero"):
        numdiff.range(0, 1, 0)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_regression_losses_promote_an_integer_target_as_pytorch_does(name):
    torch = pytest.importorskip("torch")
    output = np.linspace(-1, 12, 10).astype(np.float32).reshape(1, 10)
    ours = getattr(nf, name)(numdiff.tensor(output, requires_grad=True), numdiff.arange(1, 11).view(1, -1))
    theirs = getattr(torch.nn.functional, name)(torch.tensor(output), torch.arange(1, 11).view(1, -1))
    assert ours.dtype is numdiff.float32
    np.testing.assert_allclose(ours.detach().numpy(), theirs.numpy(), rtol=1e-6)
    ours.backward()  # the gradient reaches the float input
