"""numdiff.linalg against torch.linalg: values in float32 and float64, gradients (first and second
order, batched), the degenerate cases, errors on bad input, vmap, compile and the namespaces."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import numdiff
from numdiff import linalg
from numdiff.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)
BATCH = (2, 3)


def _spd(n=4, batch=BATCH):
    x = RNG.standard_normal(batch + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _square(n=4, batch=BATCH):
    return RNG.standard_normal(batch + (n, n)) + 2 * np.eye(n)


def _tall(m=5, n=3, batch=BATCH):
    return RNG.standard_normal(batch + (m, n))


def _nd(a, dtype):
    return numdiff.tensor(a).to(dtype)


def _pt(a, dtype):
    return torch.from_numpy(np.array(a)).to(dtype)


DTYPES = [(numdiff.float32, torch.float32, 1e-5), (numdiff.float64, torch.float64, 1e-10)]

# name: (inputs, numdiff call, torch call, comparison of outputs invariant to eigen/singular vector signs)
FORWARD = {
    "cholesky": (lambda: (_spd(),), lambda a: linalg.cholesky(a), lambda a: torch.linalg.cholesky(a)),
    "cholesky upper": (lambda: (_spd(),), lambda a: linalg.cholesky(a, upper=True),
                       lambda a: torch.linalg.cholesky(a, upper=True)),
    "solve": (lambda: (_square(), RNG.standard_normal(BATCH + (4, 2))), linalg.solve, torch.linalg.solve),
    "solve vector": (lambda: (_square(), RNG.standard_normal(BATCH + (4,))), linalg.solve, torch.linalg.solve),
    "solve broadcast": (lambda: (_square(batch=(3,)), RNG.standard_normal((2, 3, 4, 1))), linalg.solve,
                        torch.linalg.solve),
    "solve_triangular": (lambda: (np.tril(_square()) + 2 * np.eye(4), RNG.standard_normal(BATCH + (4, 3))),
                         lambda a, b: linalg.solve_triangular(a, b, upper=False),
                         lambda a, b: torch.linalg.solve_triangular(a, b, upper=False)),
    "inv": (lambda: (_square(),), linalg.inv, torch.linalg.inv),
    "det": (lambda: (_square(),), linalg.det, torch.linalg.det),
    "slogdet": (lambda: (_square(),), lambda a: tuple(linalg.slogdet(a)), lambda a: tuple(torch.linalg.slogdet(a))),
    "eigvalsh": (lambda: (_spd(),), linalg.eigvalsh, torch.linalg.eigvalsh),
    "eigh": (lambda: (_spd(),), lambda a: (linalg.eigh(a)[0], linalg.eigh(a)[1].abs()),
             lambda a: (torch.linalg.eigh(a)[0], torch.linalg.eigh(a)[1].abs())),
    "svdvals": (lambda: (_tall(),), linalg.svdvals, torch.linalg.svdvals),
    "svd reduced": (lambda: (_tall(),), lambda a: tuple(t.abs() for t in linalg.svd(a, full_matrices=False)),
                    lambda a: tuple(t.abs() for t in torch.linalg.svd(a, full_matrices=False))),
    "svd full": (lambda: (_tall(),), lambda a: tuple(t.shape for t in linalg.svd(a)),
                 lambda a: tuple(t.shape for t in torch.linalg.svd(a))),
    "qr": (lambda: (_tall(),), lambda a: tuple(t.abs() for t in linalg.qr(a)),
           lambda a: tuple(t.abs() for t in torch.linalg.qr(a))),
    "pinv": (lambda: (_tall(),), linalg.pinv, torch.linalg.pinv),
    "lstsq": (lambda: (_tall(), RNG.standard_normal(BATCH + (5, 2))),
              lambda a, b: linalg.lstsq(a, b).solution, lambda a, b: torch.linalg.lstsq(a, b).solution),
    "matrix_exp": (lambda: (0.3 * _square(),), linalg.matrix_exp, torch.linalg.matrix_exp),
    "matrix_power -3": (lambda: (_square(),), lambda a: linalg.matrix_power(a, -3),
                        lambda a: torch.linalg.matrix_power(a, -3)),
    "matrix_power 5": (lambda: (0.5 * _square(),), lambda a: linalg.matrix_power(a, 5),
                       lambda a: torch.linalg.matrix_power(a, 5)),
    "lu_factor": (lambda: (_square(),), lambda a: tuple(linalg.lu_factor(a)), lambda a: tuple(torch.linalg.lu_factor(a))),
    "lu": (lambda: (_square(),), lambda a: tuple(linalg.lu(a)), lambda a: tuple(torch.linalg.lu(a))),
    "cond": (lambda: (_square(),), linalg.cond, torch.linalg.cond),
    "cond fro": (lambda: (_square(),), lambda a: linalg.cond(a, "fro"), lambda a: torch.linalg.cond(a, "fro")),
    "matrix_rank": (lambda: (_tall(),), linalg.matrix_rank, torch.linalg.matrix_rank),
    "matrix_norm nuc": (lambda: (_tall(),), lambda a: linalg.matrix_norm(a, "nuc"),
                        lambda a: torch.linalg.matrix_norm(a, "nuc")),
    "matrix_norm 2": (lambda: (_tall(),), lambda a: linalg.matrix_norm(a, 2), lambda a: torch.linalg.matrix_norm(a, 2)),
    "householder_product": (lambda: (_tall(), RNG.standard_normal(BATCH + (3,))), linalg.householder_product,
                            torch.linalg.householder_product),
    "cholesky_solve": (lambda: (RNG.standard_normal(BATCH + (4, 2)), np.linalg.cholesky(_spd())),
                       numdiff.cholesky_solve, torch.cholesky_solve),
    "cholesky_inverse": (lambda: (np.linalg.cholesky(_spd(batch=())),), numdiff.cholesky_inverse, torch.cholesky_inverse),
    "logdet": (lambda: (_spd(),), numdiff.logdet, torch.logdet),
    "pinverse": (lambda: (_tall(),), numdiff.pinverse, torch.pinverse),
}  # fmt: skip


def _compare(ours, theirs, tol):
    if isinstance(theirs, torch.Size):
        assert tuple(ours) == tuple(theirs)
    elif isinstance(theirs, (tuple, list)):
        for o, t in zip(ours, theirs):
            _compare(o, t, tol)
    else:
        np.testing.assert_allclose(ours.numpy().astype(np.float64), theirs.numpy().astype(np.float64), rtol=tol,
                                   atol=tol)


@pytest.mark.parametrize("name", list(FORWARD))
@pytest.mark.parametrize(("nd_dtype", "pt_dtype", "tol"), DTYPES, ids=["float32", "float64"])
def test_forward_matches_torch(name, nd_dtype, pt_dtype, tol):
    make, ours, theirs = FORWARD[name]
    arrays = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = theirs(*(_pt(a, pt_dtype) for a in arrays))
    got = ours(*(_nd(a, nd_dtype) for a in arrays))
    scale = 10 if nd_dtype is numdiff.float32 else 100  # condition numbers of a few tens
    _compare(got, expected, tol * scale)


def _inputs(*arrays):
    return tuple(numdiff.tensor(a, requires_grad=True) for a in arrays)


GRADIENTS = {
    "cholesky batched": (lambda: (RNG.standard_normal((2, 3, 3)),),
                         lambda x: linalg.cholesky(x @ x.mT + 3 * numdiff.eye(3, dtype=x.dtype))),
    "solve broadcast": (lambda: (_square(3, (2,)), RNG.standard_normal((3, 2, 3, 2))), linalg.solve),
    "inv batched": (lambda: (_square(3, (2,)),), linalg.inv),
    "slogdet batched": (lambda: (_square(3, (2,)),), lambda a: linalg.slogdet(a).logabsdet),
    "solve_triangular left": (lambda: (np.tril(_square(3, (2,))) + np.eye(3), RNG.standard_normal((2, 3, 2))),
                              lambda a, b: linalg.solve_triangular(a, b, upper=False)),
}


@pytest.mark.parametrize("name", list(GRADIENTS))
def test_second_derivatives_of_cholesky_solve_inv_and_slogdet(name):
    make, fn = GRADIENTS[name]
    inputs = _inputs(*make())
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


FIRST_ORDER = {
    "lu": (lambda: (_square(3, (2,)),), lambda a: tuple(linalg.lu(a))[1:]),
    "lu_factor then lu_solve": (lambda: (_square(3, (2,)), RNG.standard_normal((2, 3, 2))),
                                lambda a, b: linalg.lu_solve(*linalg.lu_factor(a), b)),
    "lstsq": (lambda: (_tall(4, 2, (2,)), RNG.standard_normal((2, 4, 1))), lambda a, b: linalg.lstsq(a, b).solution),
    "householder_product": (lambda: (_tall(4, 3, ()), RNG.standard_normal(2)), linalg.householder_product),
    "cond": (lambda: (_square(3, ()),), linalg.cond),
    "matrix_power": (lambda: (_square(3, ()),), lambda a: linalg.matrix_power(a, -2)),
    "multi_dot": (lambda: (RNG.standard_normal(3), RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2))),
                  lambda a, b, c: linalg.multi_dot([a, b, c])),
    "nuclear norm": (lambda: (_tall(4, 3, ()),), lambda a: linalg.matrix_norm(a, "nuc")),
    "cholesky_solve": (lambda: (RNG.standard_normal((3, 2)), np.linalg.cholesky(_spd(3, ()))),
                       lambda b, low: numdiff.cholesky_solve(b, low.tril())),
    "det at a singular matrix": (lambda: (np.array([[1.0, 2.0], [2.0, 4.0]]),), linalg.det),
    "lu of a tall matrix": (lambda: (_tall(5, 3, (2,)),), lambda a: tuple(linalg.lu(a))[1:]),
    "lu of a wide matrix": (lambda: (_tall(3, 5, (2,)),), lambda a: tuple(linalg.lu(a))[1:]),
    "qr of a wide matrix": (lambda: (_tall(3, 5, (2,)),), lambda a: tuple(linalg.qr(a))),
    "qr of a wide matrix, r only": (lambda: (_tall(2, 4, ()),), lambda a: linalg.qr(a, mode="r").R),
    "matrix_power 0": (lambda: (_square(3, (2,)),), lambda a: linalg.matrix_power(a, 0) + a),
}


@pytest.mark.parametrize("name", list(FIRST_ORDER))
def test_gradients_of_the_composed_and_pivoted_functions(name):
    make, fn = FIRST_ORDER[name]
    assert gradcheck(fn, _inputs(*make()))


def test_repeated_eigenvalues_give_finite_value_gradients_and_infinite_vector_gradients():
    a = numdiff.eye(3, dtype=numdiff.float64, requires_grad=True)
    values, vectors = linalg.eigh(a * 2)
    values.sum().backward()
    assert np.isfinite(a.grad.numpy()).all()
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.eye(3))
    a.grad = None
    _, vectors = linalg.eigh(a * 2)
    (vectors * numdiff.arange(9.0, dtype=numdiff.float64).reshape(3, 3)).sum().backward()
    assert not np.isfinite(a.grad.numpy()).all()  # PyTorch: only defined for distinct eigenvalues


def test_backward_through_the_extra_vectors_of_a_full_svd_raises():
    a = numdiff.tensor(_tall(4, 2, ()), requires_grad=True)
    u, _, _ = linalg.svd(a, full_matrices=True)
    with pytest.raises(RuntimeError, match="full_matrices=False"):
        u.sum().backward()


BAD = {
    "not square": (lambda: linalg.inv(numdiff.ones(2, 3)), ValueError, "square matrices, but they are 2 by 3"),
    "one dim": (lambda: linalg.det(numdiff.ones(3)), ValueError, "at least 2 dimensions"),
    "integer": (lambda: linalg.cholesky(numdiff.ones(2, 2, dtype=numdiff.int64)), TypeError, "float32 or float64"),
    "half": (lambda: linalg.solve(numdiff.ones(2, 2).half(), numdiff.ones(2).half()), TypeError, "float32 or float64"),
    "nan": (lambda: linalg.eigh(numdiff.tensor([[1.0, float("nan")], [0.0, 1.0]])), ValueError, "NaN or inf"),
    "nan in a batch": (lambda: linalg.inv(numdiff.tensor(np.stack([np.eye(2), np.full((2, 2), np.inf)]))),
                       ValueError, r"Batch element 1\): 'A' holds NaN or inf"),
    "singular solve": (lambda: linalg.solve(numdiff.zeros(3, 2, 2), numdiff.ones(3, 2, 1)), linalg.LinAlgError,
                       r"Batch element 0\): The solver failed because the input matrix is singular"),
    "singular inv": (lambda: linalg.inv(numdiff.tensor([[1.0, 2.0], [2.0, 4.0]])), linalg.LinAlgError, "singular"),
    "not positive definite": (lambda: linalg.cholesky(numdiff.tensor(np.stack([np.eye(2), -np.eye(2)]))),
                              linalg.LinAlgError, r"Batch element 1\).*not positive-definite"),
    "singular lu_factor": (lambda: linalg.lu_factor(numdiff.zeros(2, 2)), linalg.LinAlgError, "singular"),
    "complex eigenvalues": (lambda: linalg.eigvals(numdiff.tensor([[0.0, 1.0], [-1.0, 0.0]])), TypeError,
                            "complex eigenvalues"),
    "shapes that do not match": (lambda: linalg.solve(numdiff.eye(3), numdiff.ones(2, 1)), ValueError,
                                 "incompatible shapes"),
    "dtypes that do not match": (lambda: linalg.solve(numdiff.eye(2), numdiff.ones(2, 1, dtype=numdiff.float64)),
                                 TypeError, "same dtype"),
    "not a tensor": (lambda: linalg.qr([[1.0]]), TypeError, "must be a Tensor, not list"),
    "bad qr mode": (lambda: linalg.qr(numdiff.eye(2), mode="full"), ValueError, "mode must be"),
    "bad UPLO": (lambda: linalg.eigh(numdiff.eye(2), UPLO="X"), ValueError, "UPLO must be 'L' or 'U'"),
    "non-integer power": (lambda: linalg.matrix_power(numdiff.eye(2), 1.5), TypeError, "n must be an int"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_raises_a_clear_error(name):
    call, error, message = BAD[name]
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 2), (2, 2, 6)])
def test_rectangular_lu_and_wide_qr_gradients_match_torch(shape):
    x = RNG.standard_normal(shape)
    weights = [RNG.standard_normal(shape[:-2] + (m, n)) for m, n in [(shape[-2], min(shape[-2:])),
                                                                    (min(shape[-2:]), shape[-1])]]

    def grads(lib, factor):
        a = lib.tensor(x, requires_grad=True)
        first, second = factor(lib, a)
        ((first * lib.tensor(weights[0])).sum() + (second * lib.tensor(weights[1])).sum()).backward()
        return a.grad.numpy()

    lu = lambda lib, a: tuple(lib.linalg.lu(a))[1:]  # noqa: E731
    np.testing.assert_allclose(grads(numdiff, lu), grads(torch, lu), rtol=1e-10, atol=1e-12)
    if shape[-2] < shape[-1]:  # torch differentiates wide QR; tall QR's Q is checked elsewhere
        qr = lambda lib, a: tuple(p.abs() for p in lib.linalg.qr(a))  # noqa: E731
        np.testing.assert_allclose(grads(numdiff, qr), grads(torch, qr), rtol=1e-10, atol=1e-12)


def test_unbatched_info_and_rank_are_0_d_like_torch():
    a = numdiff.tensor(np.eye(3))
    results = [linalg.cholesky_ex(a).info, linalg.inv_ex(a).info, linalg.solve_ex(a, a).info,
               linalg.lu_factor_ex(a).info, linalg.ldl_factor_ex(a).info, linalg.matrix_rank(a)]
    assert [tuple(r.shape) for r in results] == [()] * 6
    assert linalg.matrix_rank(a.float()).item() == 3 and tuple(linalg.matrix_rank(numdiff.ones(2, 3, 3)).shape) == (2,)


def test_the_ex_forms_report_info_instead_of_raising():
    spd_and_not = numdiff.tensor(np.stack([np.eye(2) * 2, -np.eye(2)]))
    low, info = linalg.cholesky_ex(spd_and_not)
    assert info.tolist() == [0, 1] and info.dtype is numdiff.int32
    assert np.isnan(low[1].numpy()).all() and np.allclose(low[0].numpy(), np.sqrt(2) * np.eye(2))
    inverse, info = linalg.inv_ex(numdiff.tensor(np.stack([np.eye(2), np.zeros((2, 2))])))
    assert info.tolist() == [0, 1] and np.allclose(inverse[0].numpy(), np.eye(2))
    with pytest.raises(linalg.LinAlgError):
        linalg.cholesky_ex(spd_and_not, check_errors=True)


def test_vmap_runs_the_batched_ops_once():
    a = numdiff.tensor(_square(3, (4,)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no per-example fallback warning
        batched = numdiff.func.vmap(lambda m: linalg.slogdet(m).logabsdet)(a)
        gradients = numdiff.func.vmap(numdiff.func.grad(lambda m: linalg.slogdet(m).logabsdet))(a)
    np.testing.assert_allclose(batched.numpy(), np.linalg.slogdet(a.numpy())[1])
    np.testing.assert_allclose(gradients.numpy(), np.swapaxes(np.linalg.inv(a.numpy()), -1, -2), rtol=1e-10)


def test_a_compiled_gaussian_process_objective_has_no_graph_break():
    x = numdiff.tensor(RNG.standard_normal((6, 1)))
    y = numdiff.tensor(RNG.standard_normal((6, 1)))
    log_scale = numdiff.tensor(0.1, dtype=numdiff.float64, requires_grad=True)

    def negative_log_marginal_likelihood(x, y):
        k = (-(x - x.mT) ** 2 / (2 * log_scale.exp() ** 2)).exp() + 0.1 * numdiff.eye(6, dtype=x.dtype)
        low = linalg.cholesky(k)
        alpha = numdiff.cholesky_solve(y, low)
        return 0.5 * (y * alpha).sum() + low.diagonal().log().sum()

    compiled = numdiff.compile(negative_log_marginal_likelihood)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = compiled(x, y)
    value.backward()
    compiled_grad = log_scale.grad.clone()
    log_scale.grad = None
    negative_log_marginal_likelihood(x, y).backward()
    np.testing.assert_allclose(compiled_grad.numpy(), log_scale.grad.numpy(), rtol=1e-10)
    assert compiled.compiled.eager_reason is None


def test_every_torch_linalg_function_exists_and_the_namespace_is_clean():
    theirs = {n for n in dir(torch.linalg) if not n.startswith("_") and callable(getattr(torch.linalg, n))}
    missing = sorted(theirs - set(linalg.__all__) - {"LinAlgError"})
    assert not missing, f"torch.linalg names numdiff.linalg lacks: {missing}"
    assert sorted(n for n in dir(linalg) if not n.startswith("_")) == sorted(linalg.__all__)


def test_top_level_names_and_tensor_methods():
    a = numdiff.tensor(_spd(3, ()))
    for name in ("cholesky", "inverse", "det", "logdet", "slogdet", "pinverse", "matrix_exp"):
        assert hasattr(numdiff, name) and hasattr(a, name), name
    np.testing.assert_allclose(a.inverse().numpy(), np.linalg.inv(a.numpy()), rtol=1e-10)
    u, s, v = numdiff.svd(a)
    np.testing.assert_allclose(((u * s) @ v.mT).numpy(), a.numpy(), atol=1e-12)
    assert a.matrix_power(2).allclose(a @ a)


@pytest.mark.parametrize(("ours", "theirs"), [
    (linalg.cholesky, torch.linalg.cholesky), (linalg.eigvalsh, torch.linalg.eigvalsh), (linalg.inv, torch.linalg.inv),
    (linalg.svdvals, torch.linalg.svdvals), (lambda a: linalg.slogdet(a).logabsdet, lambda a: torch.linalg.slogdet(a)[1]),
])  # fmt: skip
def test_forward_mode_and_hessians_match_torch_func(ours, theirs):
    a, tangent = _spd(3, (2,)), RNG.standard_normal((2, 3, 3))
    tangent = tangent + np.swapaxes(tangent, -1, -2)
    _, got = numdiff.func.jvp(ours, (numdiff.tensor(a),), (numdiff.tensor(tangent),))
    _, expected = torch.func.jvp(theirs, (torch.from_numpy(a),), (torch.from_numpy(tangent),))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-9, atol=1e-11)
    # On symmetric inputs (cholesky and eigvalsh read one triangle: off the symmetric subspace the
    # second derivative depends on how the first was symmetrized, a convention).
    hessian = numdiff.func.hessian(lambda m: ours((m + m.mT) / 2).sum())(numdiff.tensor(a[0]))
    expected_hessian = torch.func.hessian(lambda m: theirs((m + m.mT) / 2).sum())(torch.from_numpy(a[0]))
    np.testing.assert_allclose(hessian.numpy(), expected_hessian.numpy(), rtol=1e-8, atol=1e-10)


def test_lu_solve_broadcasts_the_batch_dims_like_torch():
    a, b = _spd(4, (3,)), RNG.standard_normal((2, 1, 4, 2))
    ours = linalg.lu_solve(*linalg.lu_factor(numdiff.tensor(a)), numdiff.tensor(b))
    theirs = torch.linalg.lu_solve(*torch.linalg.lu_factor(torch.tensor(a)), torch.tensor(b))
    assert tuple(ours.shape) == (2, 3, 4, 2)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    assert gradcheck(lambda lu, rhs: linalg.lu_solve(lu, linalg.lu_factor(lu.detach())[1], rhs),
                     _inputs(np.linalg.cholesky(a), b))


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_reports_what_each_driver_reports_in_torch(driver):
    a, b = RNG.standard_normal((2, 6, 4)), RNG.standard_normal((2, 6, 3))
    ours = linalg.lstsq(numdiff.tensor(a), numdiff.tensor(b), driver=driver)
    theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for mine, their in zip(ours, theirs):
        assert tuple(mine.shape) == tuple(their.shape)
        np.testing.assert_allclose(mine.numpy(), their.numpy(), rtol=1e-10, atol=1e-12)


EMPTY = {
    "det": lambda lib, a: lib.linalg.det(a),
    "slogdet": lambda lib, a: lib.stack(tuple(lib.linalg.slogdet(a))),
    "inv": lambda lib, a: lib.linalg.inv(a),
    "cholesky": lambda lib, a: lib.linalg.cholesky(a),
    "eigvalsh": lambda lib, a: lib.linalg.eigvalsh(a),
    "svdvals": lambda lib, a: lib.linalg.svdvals(a),
    "qr": lambda lib, a: lib.linalg.qr(a).R,
    "lu_factor": lambda lib, a: lib.linalg.lu_factor(a).LU,
    "matrix_exp": lambda lib, a: lib.linalg.matrix_exp(a),
    "solve_triangular": lambda lib, a: lib.linalg.solve_triangular(a, a, upper=True),
    "matrix_norm": lambda lib, a: lib.linalg.matrix_norm(a, "nuc"),
}


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)])
@pytest.mark.parametrize("name", list(EMPTY))
def test_empty_matrices_and_empty_batches_give_torch_results(name, shape):
    ours, theirs = EMPTY[name](numdiff, numdiff.zeros(shape, dtype=numdiff.float64)), EMPTY[name](torch, torch.zeros(shape, dtype=torch.float64))
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_norm_takes_the_nuclear_norm_over_two_dims():
    x = RNG.standard_normal((2, 3, 4))
    for kwargs in (dict(dim=(0, 2)), dict(dim=(2, 1), keepdim=True)):
        np.testing.assert_allclose(numdiff.norm(numdiff.tensor(x), p="nuc", **kwargs).numpy(),
                                   torch.norm(torch.tensor(x), p="nuc", **kwargs).numpy(), rtol=1e-12)
    assert gradcheck(lambda t: numdiff.norm(t, p="nuc", dim=(0, 2)), _inputs(x))
    with pytest.raises(ValueError, match=r"norm: p='nuc' needs two dims \(a matrix\), got dims \(0, 1, 2\)"):
        numdiff.norm(numdiff.tensor(x), p="nuc")
