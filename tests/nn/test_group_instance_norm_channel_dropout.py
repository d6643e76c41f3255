"""GroupNorm, InstanceNorm1d/2d and channel dropout (Dropout1d/2d/3d): PyTorch's values, running
statistics, state_dict keys and reprs, float64 gradients, and clear errors for bad input."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 6, 4, 5))


def _close(ours, theirs, tol=1e-12):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)


def test_group_norm_matches_torch_with_and_without_affine():
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    for groups in (1, 2, 3, 6):
        _close(
            nf.group_norm(numdiff.tensor(X), groups, numdiff.tensor(w), numdiff.tensor(b)),
            torch.nn.functional.group_norm(torch.tensor(X), groups, torch.tensor(w), torch.tensor(b)),
        )
    _close(nf.group_norm(numdiff.tensor(X[:, :, 0]), 2), torch.nn.functional.group_norm(torch.tensor(X[:, :, 0]), 2))


def test_instance_norm_matches_torch_and_updates_running_statistics_as_it():
    running = [numdiff.zeros(6, dtype=numdiff.float64), numdiff.ones(6, dtype=numdiff.float64)]
    t_running = [torch.zeros(6, dtype=torch.float64), torch.ones(6, dtype=torch.float64)]
    for _ in range(2):
        ours = nf.instance_norm(numdiff.tensor(X), *running, momentum=0.3)
        theirs = torch.nn.functional.instance_norm(torch.tensor(X), *t_running, momentum=0.3)
        _close(ours, theirs)
    for r, t_r in zip(running, t_running):
        _close(r, t_r)
    _close(
        nf.instance_norm(numdiff.tensor(X), *running, use_input_stats=False),
        torch.nn.functional.instance_norm(torch.tensor(X), *t_running, use_input_stats=False),
    )


@pytest.mark.parametrize(
    "name, arguments, shape",
    [
        ("GroupNorm", (3, 6), (3, 6, 4, 5)),
        ("GroupNorm", (2, 6, 1e-3, False), (3, 6, 7)),
        ("InstanceNorm1d", (6,), (3, 6, 7)),
        ("InstanceNorm1d", (6, 1e-5, 0.2, True, True), (6, 7)),
        ("InstanceNorm2d", (6,), (3, 6, 4, 5)),
        ("InstanceNorm2d", (6, 1e-5, None, True, True), (3, 6, 4, 5)),
    ],
)
def test_modules_match_torch_in_train_and_eval_mode(name, arguments, shape):
    ours, theirs = getattr(numdiff.nn, name)(*arguments), getattr(torch.nn, name)(*arguments)
    assert repr(ours) == repr(theirs)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    x = RNG.standard_normal(shape).astype(np.float32)
    for mode in ("train", "train", "eval"):
        getattr(ours, mode)()
        getattr(theirs, mode)()
        _close(ours(numdiff.tensor(x)), theirs(torch.tensor(x)), tol=2e-6)
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-6, atol=1e-6)


def test_group_and_instance_norm_gradients_in_float64():
    x = numdiff.tensor(X[:2, :4, :2, :3], requires_grad=True)
    w = numdiff.tensor(RNG.standard_normal(4), requires_grad=True)
    b = numdiff.tensor(RNG.standard_normal(4), requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda x, w, b: nf.group_norm(x, 2, w, b), (x, w, b))
    assert numdiff.autograd.gradcheck(lambda x, w, b: nf.instance_norm(x, weight=w, bias=b), (x, w, b))


def test_norms_refuse_bad_input_naming_the_values():
    with pytest.raises(ValueError, match=r"group_norm: expected the number of channels \(6\) to be divisible by num_groups \(4\)"):
        nf.group_norm(numdiff.ones(2, 6, 3), 4)
    with pytest.raises(ValueError, match=r"group_norm: weight must have shape \(6,\) for input \(2, 6, 3\), got \(5,\)"):
        nf.group_norm(numdiff.ones(2, 6, 3), 2, numdiff.ones(5))
    with pytest.raises(ValueError, match="GroupNorm: num_channels \\(6\\) must be divisible by num_groups \\(4\\)"):
        numdiff.nn.GroupNorm(4, 6)
    with pytest.raises(ValueError, match=r"instance_norm: expected more than 1 spatial element"):
        nf.instance_norm(numdiff.ones(2, 3, 1))
    with pytest.raises(ValueError, match=r"InstanceNorm2d\(3, .*\): expected input of shape \(N, 3, H, W\) or \(3, H, W\), got \(2, 4, 5, 5\)"):
        numdiff.nn.InstanceNorm2d(3)(numdiff.ones(2, 4, 5, 5))
    with pytest.raises(TypeError, match="group_norm: .*float"):
        nf.group_norm(numdiff.tensor([[1, 2]]), 1)


def test_channel_dropout_zeroes_whole_channels_and_scales_the_rest():
    numdiff.manual_seed(0)
    out = nf.dropout2d(numdiff.ones(8, 16, 3, 3), 0.25).numpy().reshape(8, 16, 9)
    assert (out.std(2) == 0).all()  # a channel is all kept or all dropped
    assert set(np.unique(out)) == {np.float32(0.0), np.float32(1.0 / 0.75)}
    unbatched = nf.dropout1d(numdiff.ones(16, 5), 0.5).numpy()
    assert (unbatched.std(1) == 0).all()
    x = numdiff.ones(2, 3, 4, 4)
    layer = numdiff.nn.Dropout2d(0.5)
    assert layer.eval()(x) is x
    assert repr(numdiff.nn.Dropout3d(0.2, inplace=True)) == repr(torch.nn.Dropout3d(0.2, inplace=True))
    y = numdiff.ones(2, 3, 4)
    assert numdiff.nn.Dropout1d(0.5, inplace=True)(y) is y


def test_channel_dropout_gradient_is_its_mask():
    numdiff.manual_seed(1)
    x = numdiff.ones(4, 6, 2, 2, requires_grad=True)
    out = nf.dropout2d(x, 0.5)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out.detach().numpy())


def test_channel_dropout_refuses_bad_input():
    with pytest.raises(ValueError, match=r"dropout1d: expected a 2-D \(unbatched\) or 3-D \(batched\) input, got shape \(2, 3, 4, 5\)"):
        nf.dropout1d(numdiff.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match="dropout1d: probability has to be between 0 and 1, but got 1.5"):
        nf.dropout1d(numdiff.ones(2, 3), 1.5)
