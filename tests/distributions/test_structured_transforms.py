"""CatTransform, StackTransform, ReshapeTransform, CorrCholeskyTransform, LowerCholeskyTransform and
PositiveDefiniteTransform, the constraints they map to and from, and biject_to / transform_to of
lower_cholesky, positive_definite, corr_cholesky, cat and stack, against torch."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck
from numdiff.distributions.structured_transforms import tril_to_vector, vector_to_tril

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(11)


def _both(x):
    return numdiff.tensor(x, dtype=numdiff.float64), torch.tensor(x, dtype=torch.float64)


def _close(ours, theirs, rtol=1e-12):
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-12)


def _cat(lib):
    t = lib.distributions.transforms
    return t.CatTransform([t.ExpTransform(), t.AffineTransform(1.0, 3.0), t.SigmoidTransform()], dim=1, lengths=[2, 3, 1])


def _cat_last(lib):
    t = lib.distributions.transforms
    return t.CatTransform([t.ExpTransform(), t.StickBreakingTransform()], dim=-1, lengths=[2, 3])


def _stack(lib):
    t = lib.distributions.transforms
    return t.StackTransform([t.ExpTransform(), t.TanhTransform(), t.AffineTransform(-1.0, 0.5)], dim=-1)


def _stack_front(lib):
    t = lib.distributions.transforms
    return t.StackTransform([t.SoftplusTransform(), t.ExpTransform()], dim=0)


def _reshape(lib):
    return lib.distributions.transforms.ReshapeTransform((6,), (2, 3))


def _corr_cholesky(lib):
    return lib.distributions.transforms.CorrCholeskyTransform()


# (make, input shape)
BIJECTIONS = [(_cat, (4, 6)), (_cat_last, (3, 5)), (_stack, (4, 3)), (_stack_front, (2, 5)), (_reshape, (5, 6)),
              (_corr_cholesky, (4, 6)), (_corr_cholesky, (2, 3, 10))]  # fmt: skip


@pytest.mark.parametrize(("make", "shape"), BIJECTIONS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_bijections_match_torch_forward_inverse_jacobian_and_shapes(make, shape):
    x, tx = _both(_rng.normal(size=shape) * 0.8)
    if make is _cat_last:  # StickBreaking's part maps 2 reals to a 3-simplex: feed its image shape
        x, tx = _both(np.concatenate([_rng.uniform(0.1, 2.0, (3, 2)), np.full((3, 3), 1 / 3)], -1))
        ours, theirs = make(numdiff), make(torch)
        _close(ours.inv(x), theirs.inv(tx))
        return
    ours, theirs = make(numdiff), make(torch)
    y, ty = ours(x), theirs(tx)
    _close(y, ty)
    _close(ours.inv(y), x, rtol=1e-9)
    _close(ours.log_abs_det_jacobian(x, y), theirs.log_abs_det_jacobian(tx, ty))
    assert tuple(ours.forward_shape(shape)) == tuple(theirs.forward_shape(torch.Size(shape))) == tuple(y.shape)
    assert tuple(ours.inverse_shape(y.shape)) == shape
    assert ours.bijective and ours.domain.event_dim == theirs.domain.event_dim
    assert ours.codomain.event_dim == theirs.codomain.event_dim
    assert bool(ours.codomain.check(y).all())
    if make is not _reshape:  # whose log-Jacobian is a constant 0
        assert gradcheck(lambda v: ours.log_abs_det_jacobian(v, ours(v)), (x.clone().requires_grad_(),))
    cached = ours.with_cache(1)
    y = cached(x)
    assert cached.inv(y) is x


def test_corr_cholesky_log_det_is_the_log_det_of_the_map_onto_the_strict_lower_triangle():
    transform = numdiff.distributions.transforms.CorrCholeskyTransform()
    for count in (1, 3, 6, 10):
        x = numdiff.tensor(_rng.normal(size=count), dtype=numdiff.float64)
        jacobian = numdiff.autograd.functional.jacobian(lambda v: tril_to_vector(transform(v)), x)
        expected = np.linalg.slogdet(jacobian.numpy())[1]
        assert transform.log_abs_det_jacobian(x, transform(x)).item() == pytest.approx(expected, rel=1e-10)


def test_tril_vector_round_trip_and_refusal():
    vector = numdiff.arange(10, dtype=numdiff.float64) + 1
    matrix = vector_to_tril(vector)
    assert tuple(matrix.shape) == (5, 5) and bool((matrix.triu() == 0).all())
    assert (tril_to_vector(matrix) == vector).all()
    assert tuple(vector_to_tril(vector[:6], below=0).shape) == (3, 3)
    with pytest.raises(ValueError, match="vector_to_tril: a last dimension of 4 cannot fill"):
        vector_to_tril(vector[:4])


@pytest.mark.parametrize("name", ["LowerCholeskyTransform", "PositiveDefiniteTransform"])
def test_matrix_transforms_match_torch_and_invert_on_their_image(name):
    x, tx = _both(_rng.normal(size=(2, 3, 3)))
    ours, theirs = getattr(numdiff.distributions.transforms, name)(), getattr(torch.distributions.transforms, name)()
    y = ours(x)
    _close(y, theirs(tx))
    _close(ours.inv(y), theirs.inv(theirs(tx)), rtol=1e-9)
    assert bool(ours.codomain.check(y).all()) and not ours.bijective
    assert ours == getattr(numdiff.distributions.transforms, name)()
    assert gradcheck(ours, (x.clone().requires_grad_(),))


C = numdiff.distributions.constraints
CONSTRAINTS = [
    ("transform_to", lambda c: c.lower_cholesky, "LowerCholeskyTransform", (3, 3)),
    ("transform_to", lambda c: c.positive_definite, "PositiveDefiniteTransform", (2, 3, 3)),
    ("transform_to", lambda c: c.positive_semidefinite, "PositiveDefiniteTransform", (3, 3)),
    ("biject_to", lambda c: c.corr_cholesky, "CorrCholeskyTransform", (3,)),
    ("transform_to", lambda c: c.corr_cholesky, "CorrCholeskyTransform", (2, 6)),
    ("biject_to", lambda c: c.cat([c.positive, c.real, c.unit_interval], 0, [1, 2, 1]), "CatTransform", (4, 3)),
    ("transform_to", lambda c: c.cat([c.positive, c.less_than(0.5)], -1, [2, 3]), "CatTransform", (3, 5)),
    ("biject_to", lambda c: c.stack([c.positive, c.interval(-2.0, 3.0)], -1), "StackTransform", (4, 2)),
    ("transform_to", lambda c: c.stack([c.greater_than(1.0), c.real], 0), "StackTransform", (2, 3)),
]


@pytest.mark.parametrize(("registry", "constraint", "kind", "shape"), CONSTRAINTS)
def test_registries_map_the_matrix_and_joined_constraints_as_torch(registry, constraint, kind, shape):
    ours = getattr(numdiff.distributions, registry)(constraint(C))
    theirs = getattr(torch.distributions, registry)(constraint(torch.distributions.constraints))
    assert type(ours).__name__ == type(theirs).__name__ == kind
    x, tx = _both(_rng.normal(size=shape))
    y, ty = ours(x), theirs(tx)
    _close(y, ty)
    ours_check = constraint(C).check(y)
    theirs_check = constraint(torch.distributions.constraints).check(ty)
    assert bool(ours_check.all()) and theirs_check.numpy().tolist() == ours_check.numpy().tolist()
    if ours.bijective:
        _close(ours.log_abs_det_jacobian(x, y), theirs.log_abs_det_jacobian(tx, ty))
    assert ours.domain.event_dim == theirs.domain.event_dim and ours.codomain.event_dim == theirs.codomain.event_dim


def test_matrix_constraints_check_as_torch_and_per_matrix():
    good = np.linalg.cholesky(np.array([[2.0, 0.5], [0.5, 1.0]]))
    corr = good / np.linalg.norm(good, axis=-1, keepdims=True)
    triangles = np.stack([good, corr, -good, good.T])
    symmetric = np.stack([good @ good.T, np.diag([1.0, 0.0]), -np.eye(2), np.ones((2, 2))])
    names = ("lower_cholesky", "corr_cholesky", "square", "symmetric", "positive_semidefinite", "positive_definite")
    for values in (triangles, symmetric):
        for name in names[:4] + (names[4:] if values is symmetric else ()):
            ours = getattr(C, name).check(numdiff.tensor(values)).numpy().tolist()
            assert ours == getattr(torch.distributions.constraints, name).check(torch.tensor(values)).numpy().tolist(), name
    # One matrix that is not symmetric: torch then answers the symmetry check alone for the whole
    # batch (True for -I); numdiff checks each matrix.
    mixed = numdiff.tensor(np.stack([good @ good.T, np.diag([1.0, 0.0]), -np.eye(2), good]))
    assert C.positive_semidefinite.check(mixed).numpy().tolist() == [True, True, False, False]
    assert C.positive_definite.check(mixed).numpy().tolist() == [True, False, False, False]
    assert C.square.check(numdiff.zeros(4, 2, 3)).numpy().tolist() == [False] * 4


def test_joined_transforms_and_constraints_refuse_bad_input():
    t = numdiff.distributions.transforms
    with pytest.raises(ValueError, match=r"ReshapeTransform: in_shape \(6,\) and out_shape \(4,\) have different numbers"):
        t.ReshapeTransform((6,), (4,))
    with pytest.raises(ValueError, match=r"ReshapeTransform: shape mismatch, expected a tail \(6,\) but got \(5,\)"):
        t.ReshapeTransform((6,), (2, 3)).forward_shape((2, 5))
    with pytest.raises(ValueError, match=r"CatTransform: x.size\(1\) = 5 must equal 6"):
        _cat(numdiff)(numdiff.zeros(4, 5))
    with pytest.raises(IndexError, match="StackTransform: dim -1 is out of range for x with 0 dimensions"):
        _stack(numdiff)(numdiff.tensor(1.0))
    with pytest.raises(ValueError, match=r"CatTransform: lengths \(1\) must match transforms \(2\)"):
        t.CatTransform([t.ExpTransform(), t.ExpTransform()], lengths=[2])
    with pytest.raises(TypeError, match="StackTransform: every element of tseq must be a Transform"):
        t.StackTransform([t.ExpTransform(), "exp"])
    with pytest.raises(ValueError, match="CorrCholeskyTransform: 4 is not the size of a flattened strict lower"):
        t.CorrCholeskyTransform().forward_shape((2, 4))
    with pytest.raises(ValueError, match=r"constraints.cat: lengths \(3\) must match cseq \(1\)"):
        C.cat([C.real], 0, [1, 1, 1])
    with pytest.raises(NotImplementedError, match="Cannot transform LowerCholesky constraints"):
        numdiff.distributions.biject_to(C.lower_cholesky)  # transform_to only, as in torch
