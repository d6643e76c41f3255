"""Transforms and TransformedDistribution against torch.distributions in float64: forward maps,
inverses, log |det J|, shapes, biject_to / transform_to, the cache, the distributions they make
(log_prob, cdf, icdf, sample shapes), float64 gradchecks, and refused inputs."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(17)
X = _rng.normal(size=(2, 3))
LOC, SCALE = _rng.normal(size=(2, 3)), _rng.uniform(0.5, 1.5, size=(3,))


def _t(lib, value, requires_grad: bool = False):
    return lib.tensor(np.asarray(value, dtype=np.float64), requires_grad=requires_grad)


def _close(ours, theirs, rtol: float = 1e-12) -> None:
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-13)


TRANSFORMS = {
    "exp": lambda lib: lib.distributions.transforms.ExpTransform(),
    "sigmoid": lambda lib: lib.distributions.transforms.SigmoidTransform(),
    "tanh": lambda lib: lib.distributions.transforms.TanhTransform(),
    "softplus": lambda lib: lib.distributions.transforms.SoftplusTransform(),
    "affine-tensor": lambda lib: lib.distributions.transforms.AffineTransform(
        _t(lib, LOC[0]), _t(lib, -SCALE)
    ),
    "affine-numbers": lambda lib: lib.distributions.transforms.AffineTransform(1.5, -2.0),
    "affine-event": lambda lib: lib.distributions.transforms.AffineTransform(
        0.5, _t(lib, SCALE), event_dim=1
    ),
    "compose": lambda lib: lib.distributions.transforms.ComposeTransform(
        [
            lib.distributions.transforms.AffineTransform(0.2, 3.0),
            lib.distributions.transforms.SigmoidTransform(),
        ]
    ),
    "independent-exp": lambda lib: lib.distributions.transforms.IndependentTransform(
        lib.distributions.transforms.ExpTransform(), 1
    ),
    "stick-breaking": lambda lib: lib.distributions.transforms.StickBreakingTransform(),
    "exp-inverse": lambda lib: lib.distributions.transforms.ExpTransform().inv,
}


def _input(name: str, lib):
    return _t(lib, np.exp(X) if name == "exp-inverse" else X)


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_forward_inverse_and_log_det_jacobian_match_torch(name: str) -> None:
    ours, theirs = TRANSFORMS[name](numdiff), TRANSFORMS[name](torch)
    x, tx = _input(name, numdiff), _input(name, torch)
    y, ty = ours(x), theirs(tx)
    _close(y, ty)
    _close(ours.inv(y), theirs.inv(ty), rtol=1e-10)
    _close(ours.log_abs_det_jacobian(x, y), theirs.log_abs_det_jacobian(tx, ty))
    assert ours.bijective == theirs.bijective
    assert repr(ours.domain) == repr(theirs.domain).replace("torch.", "numdiff.")
    assert repr(ours.codomain) == repr(theirs.codomain).replace("torch.", "numdiff.")
    assert tuple(ours.forward_shape((4, 2, 3))) == tuple(theirs.forward_shape(torch.Size((4, 2, 3))))
    assert tuple(ours.inverse_shape((4, 2, 3))) == tuple(theirs.inverse_shape(torch.Size((4, 2, 3))))
    assert ours.inv.inv is ours


@pytest.mark.parametrize(
    "name", ["exp", "sigmoid", "tanh", "softplus", "affine-tensor", "compose", "stick-breaking"]
)
def test_log_det_jacobian_gradcheck(name: str) -> None:
    t = TRANSFORMS[name](numdiff)
    x = _t(numdiff, X * 0.5, requires_grad=True)
    assert gradcheck(lambda v: t(v), (x,))
    if not name.startswith("affine"):  # an affine map's log |det J| does not depend on x
        assert gradcheck(lambda v: t.log_abs_det_jacobian(v, t(v)), (x,))


def test_non_bijective_transforms_match_torch() -> None:
    for make in (lambda lib: lib.distributions.transforms.AbsTransform(),
                 lambda lib: lib.distributions.transforms.SoftmaxTransform()):  # fmt: skip
        ours, theirs = make(numdiff), make(torch)
        y, ty = ours(_t(numdiff, X)), theirs(_t(torch, X))
        _close(y, ty)
        _close(ours.inv(y), theirs.inv(ty))
        assert not ours.bijective


def test_power_transform_matches_torch_and_its_sign_follows_the_exponent() -> None:
    for exponent in (2.5, -0.5):
        ours = numdiff.distributions.transforms.PowerTransform(_t(numdiff, exponent))
        theirs = torch.distributions.transforms.PowerTransform(_t(torch, exponent))
        x, tx = _t(numdiff, np.abs(X) + 0.1), _t(torch, np.abs(X) + 0.1)
        _close(ours(x), theirs(tx))
        _close(ours.log_abs_det_jacobian(x, ours(x)), theirs.log_abs_det_jacobian(tx, theirs(tx)))
        assert ours.sign.item() == theirs.sign.item()


def test_cache_returns_the_input_of_the_cached_call() -> None:
    t = numdiff.distributions.transforms.TanhTransform(cache_size=1)
    x = numdiff.tensor([30.0])  # tanh rounds to 1.0 exactly: atanh would give inf
    y = t(x)
    assert t.inv(y) is x
    with np.errstate(divide="ignore"):
        assert np.isinf(numdiff.distributions.transforms.TanhTransform().inv(y).item())
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        numdiff.distributions.transforms.ExpTransform(cache_size=2)


CONSTRAINTS = [
    lambda c: c.real,
    lambda c: c.positive,
    lambda c: c.nonnegative,
    lambda c: c.greater_than(2.0),
    lambda c: c.greater_than_eq(-1.0),
    lambda c: c.less_than(1.0),
    lambda c: c.unit_interval,
    lambda c: c.interval(-1.0, 3.0),
    lambda c: c.half_open_interval(0.0, 2.0),
    lambda c: c.simplex,
    lambda c: c.real_vector,
    lambda c: c.independent(c.positive, 1),
]


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("constraint", CONSTRAINTS)
def test_constraint_registries_match_torch(registry: str, constraint) -> None:
    ours = getattr(numdiff.distributions, registry)(constraint(numdiff.distributions.constraints))
    theirs = getattr(torch.distributions, registry)(constraint(torch.distributions.constraints))
    assert repr(ours) == repr(theirs)
    y, ty = ours(_t(numdiff, X)), theirs(_t(torch, X))
    _close(y, ty)
    assert constraint(numdiff.distributions.constraints).check(y).all()
    _close(ours.inv(y), theirs.inv(ty), rtol=1e-9)
    if ours.bijective:
        _close(ours.log_abs_det_jacobian(_t(numdiff, X), y), theirs.log_abs_det_jacobian(_t(torch, X), ty))


def test_registries_refuse_an_unregistered_constraint() -> None:
    with pytest.raises(NotImplementedError, match="Cannot transform LowerCholesky constraints"):
        numdiff.distributions.biject_to(numdiff.distributions.constraints.lower_cholesky)
    with pytest.raises(TypeError, match="Constraint subclass or instance"):
        numdiff.distributions.biject_to.register(int, lambda c: None)


def _squashed(lib, loc, scale):  # SAC's policy
    d = lib.distributions
    return d.TransformedDistribution(d.Normal(loc, scale), [d.transforms.TanhTransform(cache_size=1)])


def _log_normal_by_transform(lib, loc, scale):
    d = lib.distributions
    return d.TransformedDistribution(d.Normal(loc, scale), d.transforms.ExpTransform())


def _affine_exp(lib, loc, scale):
    d = lib.distributions
    return d.TransformedDistribution(
        d.Normal(loc, scale), [d.transforms.ExpTransform(), d.transforms.AffineTransform(2.0, -3.0)]
    )


def _batched_affine(lib, loc, scale):  # an AffineTransform whose loc widens the batch
    d = lib.distributions
    return d.TransformedDistribution(d.Normal(loc[0], scale), [d.transforms.AffineTransform(loc, 2.0)])


def _stick_breaking(lib, loc, scale):
    d = lib.distributions
    return d.TransformedDistribution(d.Normal(loc, scale), [d.transforms.StickBreakingTransform()])


DISTRIBUTIONS = [_squashed, _log_normal_by_transform, _affine_exp, _batched_affine, _stick_breaking]


@pytest.mark.parametrize("make", DISTRIBUTIONS, ids=lambda m: m.__name__.strip("_"))
def test_transformed_distribution_matches_torch(make) -> None:
    ours, theirs = (
        make(numdiff, _t(numdiff, LOC), _t(numdiff, SCALE)),
        make(torch, _t(torch, LOC), _t(torch, SCALE)),
    )
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert tuple(ours.sample((4,)).shape) == tuple(theirs.sample((4,)).shape)
    assert ours.has_rsample and repr(ours.support) == repr(theirs.support)
    torch.manual_seed(0)
    value = theirs.sample((5,))
    _close(ours.log_prob(numdiff.tensor(value.numpy())), theirs.log_prob(value), rtol=1e-10)
    shape = (2,) + tuple(theirs.batch_shape)
    expanded, texpanded = ours.expand(shape), theirs.expand(shape)
    _close(expanded.log_prob(numdiff.tensor(value[:1].numpy())), texpanded.log_prob(value[:1]), rtol=1e-10)
    if make is not _stick_breaking:
        _close(ours.cdf(numdiff.tensor(value.numpy())), theirs.cdf(value), rtol=1e-10)
        q = np.linspace(0.1, 0.9, 5).reshape(5, *(1,) * len(theirs.batch_shape))
        _close(ours.icdf(_t(numdiff, q)), theirs.icdf(_t(torch, q)), rtol=1e-10)


@pytest.mark.parametrize("make", DISTRIBUTIONS, ids=lambda m: m.__name__.strip("_"))
def test_transformed_log_prob_and_rsample_gradcheck(make) -> None:
    torch.manual_seed(1)
    value = numdiff.tensor(make(torch, _t(torch, LOC), _t(torch, SCALE)).sample((3,)).numpy())
    leaves = [_t(numdiff, LOC, True), _t(numdiff, SCALE, True)]
    assert gradcheck(lambda m, s: make(numdiff, m, s).log_prob(value), leaves)

    def draw(m, s):
        numdiff.manual_seed(4)
        return make(numdiff, m, s).rsample((2,))

    assert gradcheck(draw, leaves)


def test_squashed_gaussian_scores_its_own_saturated_draws_through_the_cache() -> None:
    # A draw saturated at tanh = 1.0 would get log_prob inf through atanh; the cache keeps x.
    loc = numdiff.tensor([40.0], dtype=numdiff.float64, requires_grad=True)
    d = _squashed(numdiff, loc, numdiff.tensor([1.0], dtype=numdiff.float64))
    numdiff.manual_seed(0)
    action = d.rsample()
    assert action.item() == 1.0
    log_prob = d.log_prob(action)
    assert np.isfinite(log_prob.item())
    log_prob.backward()
    assert np.isfinite(loc.grad.item())


def test_transformed_distribution_refuses_bad_transforms_and_values() -> None:
    normal = numdiff.distributions.Normal(0.0, 1.0)
    with pytest.raises(ValueError, match="transforms must be a Transform or list"):
        numdiff.distributions.TransformedDistribution(normal, "exp")
    with pytest.raises(ValueError, match="transforms must be a Transform or a list of Transforms"):
        numdiff.distributions.TransformedDistribution(normal, [numdiff.exp])
    with pytest.raises(ValueError, match=r"base_distribution needs to have shape with size at least 1"):
        numdiff.distributions.TransformedDistribution(
            normal, [numdiff.distributions.transforms.StickBreakingTransform()]
        )
    squashed = _squashed(numdiff, numdiff.zeros(2), numdiff.ones(2))
    with pytest.raises(
        ValueError, match=r"within the support \(Interval\(lower_bound=-1.0, upper_bound=1.0\)\)"
    ):
        squashed.log_prob(numdiff.tensor([0.5, 1.5]))
