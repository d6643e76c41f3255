"""nn.init's trunc_normal_, orthogonal_, sparse_, dirac_ and the deprecated un-underscored names:
distributions checked statistically at fixed seeds, deterministic properties exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import numdiff
import numdiff.nn.functional as nnf
from numdiff.nn import init

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (0.5, 0.2, 0.0, 0.6), (1.0, 2.0, -1.0, 10.0)])
def test_trunc_normal_follows_the_truncated_normal(mean, std, a, b):
    numdiff.manual_seed(0)
    samples = init.trunc_normal_(numdiff.empty(200, 500, dtype=numdiff.float64), mean, std, a, b).numpy().ravel()
    assert samples.min() >= a and samples.max() <= b
    reference = stats.truncnorm((a - mean) / std, (b - mean) / std, loc=mean, scale=std)
    assert stats.kstest(samples, reference.cdf).statistic < 0.005  # 100000 samples: ~0.004 at p=0.01
    assert samples.mean() == pytest.approx(reference.mean(), abs=4 * reference.std() / math.sqrt(samples.size))


def test_trunc_normal_is_reproducible_with_a_generator_and_keeps_dtype():
    # a and b are absolute bounds (not multiples of std), as in PyTorch.
    draw = [
        init.trunc_normal_(numdiff.empty(4, 6), std=0.02, a=-0.04, b=0.04, generator=numdiff.Generator().manual_seed(3))
        for _ in range(2)
    ]
    np.testing.assert_array_equal(draw[0].numpy(), draw[1].numpy())
    assert draw[0].dtype is numdiff.float32
    assert np.abs(draw[0].numpy()).max() <= 0.04 + 1e-7


def test_trunc_normal_far_mean_warns_and_bad_bounds_raise():
    with pytest.warns(UserWarning, match=r"mean=5.0 is more than 2 std"):
        init.trunc_normal_(numdiff.empty(3), mean=5.0)
    with pytest.raises(ValueError, match=r"init.trunc_normal_: expects a < b, got a=1, b=0"):
        init.trunc_normal_(numdiff.empty(3), a=1, b=0)


@pytest.mark.parametrize("shape", [(5, 5), (3, 7), (8, 3), (6, 2, 3, 3), (4, 20, 2)])
def test_orthogonal_rows_or_columns_are_orthonormal_times_gain(shape):
    numdiff.manual_seed(1)
    w = init.orthogonal_(numdiff.empty(*shape, dtype=numdiff.float64), gain=1.5).numpy()
    flat = w.reshape(shape[0], -1) / 1.5
    gram = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    np.testing.assert_allclose(gram, np.eye(gram.shape[0]), atol=1e-12)


def test_orthogonal_takes_q_with_the_sign_of_rs_diagonal():
    """With a seeded generator the result is Q of the QR of that generator's Gaussian draw, each
    column multiplied by the sign of R's diagonal (so R's diagonal is made positive)."""
    generator = numdiff.Generator().manual_seed(5)
    w = init.orthogonal_(numdiff.empty(6, 4, dtype=numdiff.float64), generator=generator).numpy()
    gaussian = numdiff.empty(6, 4, dtype=numdiff.float64).normal_(0, 1, generator=numdiff.Generator().manual_seed(5)).numpy()
    r = w.T @ gaussian  # gaussian = w r with r upper triangular and a positive diagonal
    np.testing.assert_allclose(np.tril(r, -1), 0, atol=1e-12)
    assert (np.diagonal(r) > 0).all()


def test_orthogonal_is_uniform_over_rotations():
    """Haar-distributed 2x2 rotations: the angle is uniform on (-pi, pi] (it would cluster without
    the sign correction)."""
    numdiff.manual_seed(2)
    angles = []
    for _ in range(2000):
        q = init.orthogonal_(numdiff.empty(2, 2, dtype=numdiff.float64)).numpy()
        angles.append(math.atan2(q[1, 0], q[0, 0]))
    assert stats.kstest(angles, stats.uniform(-math.pi, 2 * math.pi).cdf).pvalue > 0.001


def test_orthogonal_refuses_one_dimension():
    with pytest.raises(ValueError, match=r"init.orthogonal_: only tensors with 2 or more dimensions.*\(4,\)"):
        init.orthogonal_(numdiff.empty(4))


def test_sparse_zeros_the_same_number_in_every_column():
    numdiff.manual_seed(3)
    w = init.sparse_(numdiff.empty(200, 30, dtype=numdiff.float64), sparsity=0.25, std=0.5).numpy()
    assert ((w == 0).sum(axis=0) == math.ceil(0.25 * 200)).all()
    nonzero = w[w != 0]
    assert nonzero.std() == pytest.approx(0.5, rel=0.03)
    assert stats.kstest(nonzero, stats.norm(scale=0.5).cdf).pvalue > 0.001


def test_sparse_refuses_other_than_two_dimensions():
    with pytest.raises(ValueError, match=r"init.sparse_: only tensors with 2 dimensions.*\(2, 3, 4\)"):
        init.sparse_(numdiff.empty(2, 3, 4), 0.1)


@pytest.mark.parametrize("shape, groups", [((4, 4, 3), 1), ((6, 3, 3, 3), 2), ((4, 6, 5, 5), 1), ((2, 2, 3, 3, 3), 1), ((9, 2, 1, 3), 3)])
def test_dirac_matches_torch(shape, groups):
    ours = init.dirac_(numdiff.empty(*shape), groups=groups).numpy()
    theirs = torch.nn.init.dirac_(torch.empty(*shape), groups=groups).numpy()
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("groups", [1, 2])
def test_dirac_convolution_passes_the_input_through(rng, groups):
    x = numdiff.tensor(rng.standard_normal((2, 4, 6, 6)))
    w = init.dirac_(numdiff.empty(4, 4 // groups, 3, 3, dtype=numdiff.float64), groups=groups)
    np.testing.assert_array_equal(nnf.conv2d(x, w, padding=1, groups=groups).numpy(), x.numpy())


def test_dirac_refuses_bad_shapes_and_groups():
    with pytest.raises(ValueError, match=r"init.dirac_: only tensors with 3, 4, or 5 dimensions.*\(3, 3\)"):
        init.dirac_(numdiff.empty(3, 3))
    with pytest.raises(ValueError, match=r"init.dirac_: dim 0 \(size 5\) must be divisible by groups=2"):
        init.dirac_(numdiff.empty(5, 2, 3), groups=2)


def test_every_torch_init_function_exists():
    theirs = {name for name in dir(torch.nn.init) if not name.startswith("_") and callable(getattr(torch.nn.init, name))}
    theirs -= {"Callable", "Literal", "ParamSpec", "Tensor", "TypeVar"}
    assert theirs <= set(dir(init)), sorted(theirs - set(dir(init)))


def test_deprecated_names_warn_and_fill():
    with pytest.warns(FutureWarning, match=r"`nn.init.constant` is now deprecated in favor of `nn.init.constant_`"):
        w = init.constant(numdiff.empty(3), 2.0)
    np.testing.assert_array_equal(w.numpy(), [2.0, 2.0, 2.0])


def test_init_leaves_parameters_leaves_with_their_gradient_flag():
    p = numdiff.nn.Parameter(numdiff.empty(4, 4))
    for fill in (init.orthogonal_, lambda t: init.trunc_normal_(t, std=0.1), lambda t: init.sparse_(t, 0.5)):
        out = fill(p)
        assert out is p and p.requires_grad and p.grad_fn is None
