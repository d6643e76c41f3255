"""PyTorch's aliases and composed functions (numdiff._torch_names): each against torch on the same
float64 inputs, value and gradient, a float64 gradcheck, and its bad input refused by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4)) + 0.1
V3, V4 = RNG.standard_normal(3), RNG.standard_normal(4)
M = RNG.standard_normal((3, 3))
BATCH1, BATCH2 = RNG.standard_normal((2, 3, 5)), RNG.standard_normal((2, 5, 4))
SAMPLES = RNG.standard_normal((3, 6))
IDX = np.array([2, 0])
MASK = A > 0.2

# name -> (function of the library and the float64 tensors, the inputs). Each runs on both libraries.
CASES = {
    "deg2rad": (lambda lib, a: lib.deg2rad(a), [A]),
    "rad2deg": (lambda lib, a: lib.rad2deg(a), [A]),
    "arccos": (lambda lib, a: lib.arccos(a * 0.3), [A]),
    "arcsinh": (lambda lib, a: a.arcsinh(), [A]),
    "arctanh": (lambda lib, a: lib.arctanh(a * 0.3), [A]),
    "sgn": (lambda lib, a: lib.sgn(a) * a, [A]),
    "fix": (lambda lib, a: lib.fix(a * 3) + a, [A]),
    "positive": (lambda lib, a: lib.positive(a), [A]),
    "float_power": (lambda lib, a, b: lib.float_power(lib.abs(a) + 0.5, b), [A, B]),
    "fmax": (lambda lib, a, b: lib.fmax(a, b), [A, B]),
    "fmin": (lambda lib, a, b: lib.fmin(a, b), [A, B]),
    "copysign": (lambda lib, a, b: lib.copysign(a, b), [A, B]),
    "logaddexp2": (lambda lib, a, b: lib.logaddexp2(a, b), [A, B]),
    "ldexp": (lambda lib, a: lib.ldexp(a, lib.tensor([1.0, -2.0, 3.0, 0.0], dtype=lib.float64)), [A]),
    "sinc": (lambda lib, a: lib.sinc(a), [A]),
    "mv": (lambda lib, m, v: lib.mv(m, v), [A, V4]),
    "vdot": (lambda lib, a, b: lib.vdot(a, b), [V4, V4 * 2]),
    "addr": (lambda lib, m, a, b: lib.addr(m, a, b, beta=0.5, alpha=2.0), [A, V3, V4]),
    "ger": (lambda lib, a, b: lib.ger(a, b), [V3, V4]),
    "addbmm": (lambda lib, m, b1, b2: lib.addbmm(m, b1, b2, alpha=0.7), [A, BATCH1, BATCH2]),
    "cov": (lambda lib, x: lib.cov(x), [SAMPLES]),
    "cov_weighted": (
        lambda lib, x: lib.cov(x, correction=0, aweights=lib.tensor([1.0, 2, 1, 3, 1, 1], dtype=lib.float64)), [SAMPLES]
    ),
    "corrcoef": (lambda lib, x: lib.corrcoef(x), [SAMPLES]),
    "aminmax": (lambda lib, a: lib.stack(list(lib.aminmax(a, dim=1))), [A]),
    "fliplr": (lambda lib, a: lib.fliplr(a), [A]),
    "flipud": (lambda lib, a: lib.flipud(a), [A]),
    "hsplit": (lambda lib, a: lib.hsplit(a, 2)[1], [A]),
    "vsplit": (lambda lib, a: lib.vsplit(a, [1])[1], [A]),
    "ravel": (lambda lib, a: lib.ravel(a.t()), [A]),
    "diagflat": (lambda lib, a: lib.diagflat(a[:2, :2], 1), [A]),
    "msort": (lambda lib, a: lib.msort(a), [A]),
    "take_along_dim": (lambda lib, a: lib.take_along_dim(a, lib.argsort(a, dim=1), dim=1), [A]),
    "take_along_dim_flat": (lambda lib, a: lib.take_along_dim(a, lib.tensor([0, 5, 11])), [A]),
    "index_fill": (lambda lib, a: lib.index_fill(a, 1, lib.tensor([0, 2]), -1.5), [A]),
    "index_copy": (lambda lib, a, s: a.index_copy(1, lib.tensor([3, 1]), s[:, :2]), [A, B]),
    "masked_scatter": (lambda lib, a, s: a.masked_scatter(lib.tensor(MASK), s), [A, B]),
    "put": (lambda lib, a, s: a.put(lib.tensor([0, 7, -1]), s[0, :3]), [A, B]),
    "put_accumulate": (lambda lib, a, s: a.put(lib.tensor([0, 7, 0]), s[0, :3], accumulate=True), [A, B]),
    "unfold": (lambda lib, a: a.unfold(1, 2, 1), [A]),
    "unfold_step": (lambda lib, a: a.unfold(0, 2, 2), [A]),
    "sum_to_size": (lambda lib, a: a.sum_to_size(3, 1), [A]),
    "trapezoid": (lambda lib, a: lib.trapezoid(a), [A]),
    "trapezoid_x": (lambda lib, a: lib.trapezoid(a, lib.tensor([0.0, 0.5, 2.0, 2.5], dtype=lib.float64)), [A]),
    "cumulative_trapezoid": (lambda lib, a: lib.cumulative_trapezoid(a, dx=0.5, dim=0), [A]),
    "quantile": (lambda lib, a: lib.quantile(a, 0.3, dim=1), [A]),
    "quantile_q": (lambda lib, a: lib.quantile(a, lib.tensor([0.1, 0.5, 0.9], dtype=lib.float64), dim=0, keepdim=True), [A]),
    "quantile_all": (lambda lib, a: lib.quantile(a, 0.75, interpolation="midpoint"), [A]),
    "quantile_nearest": (lambda lib, a: lib.quantile(a, 0.4, dim=1, interpolation="nearest"), [A]),
    "renorm": (lambda lib, a: lib.renorm(a, 2, 0, 1.0), [A]),
    "adjoint": (lambda lib, a: lib.adjoint(a), [A]),
    "mH": (lambda lib, a: a.mH, [A]),
    "rsub": (lambda lib, a, b: lib.rsub(a, b, alpha=2), [A, B]),
    "greater_inplace": (lambda lib, a: (a * 1).greater_(0.1) * a, [A]),
}


def _run(library, case, arrays):
    function, _ = CASES[case]
    if library is torch:
        inputs = [torch.tensor(x, requires_grad=True) for x in arrays]
    else:
        inputs = [numdiff.tensor(x, requires_grad=True) for x in arrays]
    return function(library, *inputs), inputs


@pytest.mark.parametrize("case", sorted(CASES))
def test_value_and_gradient_match_torch(case):
    arrays = CASES[case][1]
    theirs, their_inputs = _run(torch, case, arrays)
    ours, our_inputs = _run(numdiff, case, arrays)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    if not theirs.requires_grad:
        return
    weights = RNG.standard_normal(tuple(theirs.shape))
    (theirs * torch.tensor(weights)).sum().backward()
    (ours * numdiff.tensor(weights)).sum().backward()
    for mine, their in zip(our_inputs, their_inputs):
        expected = np.zeros_like(their.detach().numpy()) if their.grad is None else their.grad.numpy()
        got = np.zeros_like(expected) if mine.grad is None else mine.grad.numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", ["sinc", "cov", "corrcoef", "quantile_q", "renorm", "masked_scatter", "unfold", "addbmm"])
def test_float64_gradcheck(case):
    function, arrays = CASES[case]
    inputs = [numdiff.tensor(x, requires_grad=True) for x in arrays]
    assert gradcheck(lambda *xs: function(numdiff, *xs), inputs)


def test_sinc_has_gradient_zero_at_zero():
    x = numdiff.tensor([0.0, 0.5], dtype=numdiff.float64, requires_grad=True)
    numdiff.sinc(x).sum().backward()
    theirs = torch.tensor([0.0, 0.5], dtype=torch.float64, requires_grad=True)
    torch.sinc(theirs).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), theirs.grad.numpy(), atol=1e-12)


def test_nan_rules_match_torch():
    a = [1.0, float("nan"), float("nan"), -0.0]
    b = [float("nan"), 2.0, float("nan"), 0.0]
    for name in ("fmax", "fmin", "copysign"):
        ours = getattr(numdiff, name)(numdiff.tensor(a), numdiff.tensor(b)).numpy()
        theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()
        if name == "copysign":  # fmax(-0.0, 0.0) may be either zero, in C and in PyTorch
            np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
        np.testing.assert_array_equal(ours, theirs)
    x = [1.0, float("nan"), 3.0, 2.0]
    for q in (0.0, 0.5, 1.0):
        assert np.isnan(numdiff.quantile(numdiff.tensor(x), q).item())
        assert numdiff.nanquantile(numdiff.tensor(x), q).item() == torch.nanquantile(torch.tensor(x), q).item()
    assert np.isnan(numdiff.nanquantile(numdiff.tensor([float("nan")] * 2), 0.5).item())


def test_integer_inputs_promote_as_torch():
    for name in ("deg2rad", "rad2deg", "sinc", "signbit", "isposinf", "isneginf", "isreal", "float_power"):
        args = (2,) if name == "float_power" else ()
        ours = getattr(numdiff, name)(numdiff.tensor([1, -2, 3]), *args)
        theirs = getattr(torch, name)(torch.tensor([1, -2, 3]), *args)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], name
        np.testing.assert_allclose(ours.numpy().astype(float), theirs.numpy().astype(float), rtol=1e-6)


def test_broadcast_helpers_match_torch():
    assert numdiff.broadcast_shapes((3, 1), (1, 4), (4,)) == torch.broadcast_shapes((3, 1), (1, 4), (4,))
    ours = numdiff.broadcast_tensors(numdiff.ones(3, 1), numdiff.zeros(4))
    assert [tuple(t.shape) for t in ours] == [(3, 4), (3, 4)]
    with pytest.raises(ValueError, match="broadcast_shapes.*dimension"):
        numdiff.broadcast_shapes((3,), (4,))


def test_inplace_forms_write_into_self():
    x = numdiff.tensor([[0.0, 90.0], [180.0, 45.0]])
    x.deg2rad_()
    np.testing.assert_allclose(x.numpy(), np.deg2rad([[0.0, 90.0], [180.0, 45.0]]), rtol=1e-6)
    y = numdiff.zeros(2, 3)
    y.index_fill_(1, numdiff.tensor([1]), 2.0)
    assert y.tolist() == [[0.0, 2.0, 0.0], [0.0, 2.0, 0.0]]
    z = numdiff.tensor([1.0, 2.0, 3.0])
    z.eq_(2.0)
    assert z.tolist() == [0.0, 1.0, 0.0] and z.dtype == numdiff.float32
    assert numdiff.relu_(numdiff.tensor([-1.0, 1.0])).tolist() == [0.0, 1.0]


def test_a_non_differentiable_inplace_write_cuts_the_history():
    # y.uniform_() or y.eq_(...) on a tensor with history: no gradient flows through the old
    # value any more (PyTorch's is zero there); before, the old node stayed and gave ones.
    x = numdiff.tensor([1.0, 2.0], requires_grad=True)
    y = x.clone()
    y.uniform_()
    (y * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.numpy())
    x.grad = None
    y = x * 1
    y.gt_(1.5)
    (y * x).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0]


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: numdiff.mv(numdiff.ones(2, 3), numdiff.ones(2)), ValueError, "mv: input"),
        (lambda: numdiff.vdot(numdiff.ones(2, 2), numdiff.ones(2)), ValueError, "vdot: input must be 1-D"),
        (lambda: numdiff.fliplr(numdiff.ones(3)), ValueError, "fliplr: input must be at least 2-D"),
        (lambda: numdiff.hsplit(numdiff.ones(2, 5), 2), ValueError, "hsplit: dimension 1 of size 5"),
        (lambda: numdiff.quantile(numdiff.ones(3), 1.5), ValueError, r"quantile: q values must be in \[0, 1\]"),
        (lambda: numdiff.quantile(numdiff.ones(3, dtype=numdiff.int64), 0.5), TypeError, "quantile: input must be a floating"),
        (lambda: numdiff.quantile(numdiff.ones(3), 0.5, interpolation="cubic"), ValueError, "quantile: interpolation"),
        (lambda: numdiff.index_fill(numdiff.ones(2, 3), 1, numdiff.tensor([3]), 0.0), IndexError, "index_fill: index 3"),
        (lambda: numdiff.index_copy(numdiff.ones(2, 3), 1, numdiff.tensor([0]), numdiff.ones(2, 2)), ValueError, "index_copy: source"),
        (lambda: numdiff.masked_scatter(numdiff.ones(3), numdiff.tensor([1, 0, 1]), numdiff.ones(3)), TypeError, "masked_scatter: mask"),
        (lambda: numdiff.masked_scatter(numdiff.ones(3), numdiff.tensor([True] * 3), numdiff.ones(2)), ValueError, "selects 3 places"),
        (lambda: numdiff.ones(4).put(numdiff.tensor([4]), numdiff.ones(1)), IndexError, "put: index 4"),
        (lambda: numdiff.ones(4).unfold(0, 5, 1), ValueError, "unfold: size 5"),
        (lambda: numdiff.ones(4).unfold(0, 2, 0), ValueError, "unfold: size must be"),
        (lambda: numdiff.ones(2, 3).sum_to_size(2, 2), ValueError, "sum_to_size"),
        (lambda: numdiff.renorm(numdiff.ones(3), 2, 0, 1.0), ValueError, "renorm: input needs"),
        (lambda: numdiff.cov(numdiff.ones(2, 3, 4)), ValueError, "cov: expected"),
        (lambda: numdiff.positive(numdiff.tensor([True])), TypeError, "positive"),
        (lambda: numdiff.take_along_dim(numdiff.ones(2, 2), numdiff.ones(2, 2), 1), TypeError, "take_along_dim: indices"),
        (lambda: numdiff.heaviside(numdiff.ones(2), numdiff.ones(2, dtype=numdiff.float64)), TypeError, "heaviside"),
        (lambda: numdiff.tensor(2.0).is_nonzero() and numdiff.ones(2).is_nonzero(), RuntimeError, "is_nonzero"),
        (lambda: numdiff.trapezoid(numdiff.ones(3), numdiff.ones(2)), ValueError, "trapezoid: x has 2 points"),
    ],
)
def test_bad_input_is_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


SCATTER_INDEX = np.array([[0, 1, 0, 2], [1, 1, 0, 0], [2, 2, 2, 1]])
SCATTER_SRC = RNG.standard_normal((3, 4))
SCATTER_SRC[0, 1] = SCATTER_SRC[0, 0]  # a tie inside one group


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "prod"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_torch_with_gradients_split_among_ties(reduce, include_self):
    theirs_in = [torch.tensor(x, requires_grad=True) for x in (B[:, :4], SCATTER_SRC)]
    ours_in = [numdiff.tensor(x.detach().numpy(), requires_grad=True) for x in theirs_in]
    theirs = theirs_in[0].scatter_reduce(1, torch.tensor(SCATTER_INDEX), theirs_in[1], reduce, include_self=include_self)
    ours = ours_in[0].scatter_reduce(1, numdiff.tensor(SCATTER_INDEX), ours_in[1], reduce, include_self=include_self)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    weights = RNG.standard_normal((3, 4))
    (theirs * torch.tensor(weights)).sum().backward()
    (ours * numdiff.tensor(weights)).sum().backward()
    for mine, their in zip(ours_in, theirs_in):
        np.testing.assert_allclose(mine.grad.numpy(), their.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatter_reduce_prod_matches_torch_bit_for_bit_with_zeros_in_groups(dtype):
    # Random shapes, dims and indices; zeros in input and src so that groups hold one zero or
    # several (the gradient is the product of the other factors, not result / factor).
    rng = np.random.default_rng(7)
    for case in range(60):
        shape = tuple(int(n) for n in rng.integers(1, 5, size=rng.integers(1, 4)))
        dim = int(rng.integers(0, len(shape)))
        index_shape = [int(rng.integers(1, n + 1)) for n in shape]
        index_shape[dim] = int(rng.integers(1, 7))
        x, src = rng.standard_normal(shape).astype(dtype), rng.standard_normal(index_shape).astype(dtype)
        x[rng.random(shape) < 0.3] = 0
        src[rng.random(index_shape) < 0.25] = 0
        index = rng.integers(0, shape[dim], size=index_shape)
        include_self = bool(case % 2)
        results = []
        for lib in (numdiff, torch):
            a, s = lib.tensor(x, requires_grad=True), lib.tensor(src, requires_grad=True)
            out = a.scatter_reduce(dim, lib.tensor(index), s, "prod", include_self=include_self)
            out.backward(lib.tensor(np.linspace(-1, 1, out.numel(), dtype=dtype).reshape(out.shape)))
            results.append((out.detach().numpy(), a.grad.numpy(), s.grad.numpy()))
        with numdiff.no_grad():  # the host reduction gives the same bits
            untracked = numdiff.tensor(x).scatter_reduce(dim, numdiff.tensor(index), numdiff.tensor(src), "prod", include_self=include_self)
        (out, *grads), (their_out, *their_grads) = results
        np.testing.assert_array_equal(out, their_out)
        np.testing.assert_array_equal(untracked.numpy(), out)
        for mine, their in zip(grads, their_grads):
            np.testing.assert_allclose(mine, their, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6 if dtype == np.float32 else 1e-13)


def test_scatter_reduce_prod_gradcheck_and_second_derivative():
    index = numdiff.tensor(SCATTER_INDEX)
    x, src = B[:, :4].copy(), RNG.standard_normal((3, 4))
    src[1, 2] = 0.0  # one zero factor in a group
    for include_self in (True, False):
        inputs = [numdiff.tensor(x, requires_grad=True), numdiff.tensor(src, requires_grad=True)]
        call = lambda a, s, i=include_self: numdiff.scatter_reduce(a, 1, index, s, "prod", include_self=i)  # noqa: E731
        assert gradcheck(call, inputs)
        assert gradgradcheck(call, inputs)


def test_scatter_reduce_gradcheck_and_integer_mean():
    index = numdiff.tensor(SCATTER_INDEX)
    inputs = [numdiff.tensor(B[:, :4], requires_grad=True), numdiff.tensor(RNG.standard_normal((3, 4)), requires_grad=True)]
    for reduce in ("mean", "amax"):
        assert gradcheck(lambda a, s, r=reduce: numdiff.scatter_reduce(a, 1, index, s, r), inputs)
    ours = numdiff.tensor([1, 2, 3]).scatter_reduce(0, numdiff.tensor([0, 1, 0]), numdiff.tensor([5, 6, 7]), "mean")
    assert ours.tolist() == torch.tensor([1, 2, 3]).scatter_reduce(0, torch.tensor([0, 1, 0]), torch.tensor([5, 6, 7]), "mean").tolist()


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_scatter_reduce_extremes_second_derivative_and_exact_ties(reduce):
    # The tie shares are constants of the gradient: a second derivative flows through the
    # gathered and scattered gradient and matches torch's.
    index = SCATTER_INDEX
    src = RNG.standard_normal((3, 4))
    inputs = [numdiff.tensor(B[:, :4], requires_grad=True), numdiff.tensor(src, requires_grad=True)]
    assert gradgradcheck(lambda a, s: numdiff.scatter_reduce(a, 1, numdiff.tensor(index), s, reduce) ** 2, inputs)
    ours_in = [numdiff.tensor(B[:, :4], requires_grad=True), numdiff.tensor(src, requires_grad=True)]
    theirs_in = [torch.tensor(B[:, :4], requires_grad=True), torch.tensor(src, requires_grad=True)]
    grads = []
    for lib, (a, s) in ((numdiff, ours_in), (torch, theirs_in)):
        out = (a.scatter_reduce(1, lib.tensor(index), s, reduce, include_self=False) ** 3).sum()
        (g,) = lib.autograd.grad(out, s, create_graph=True)
        grads.append(lib.autograd.grad((g * g).sum(), [a, s], allow_unused=True))
    for mine, their in zip(*grads):
        np.testing.assert_allclose(mine.numpy() if mine is not None else 0.0, their.numpy() if their is not None else 0.0, rtol=1e-10)
    # Three equal values in one group, none needing a gradient: the result is the value itself.
    ties = np.full(3, 0.1)
    ours = numdiff.zeros(1, dtype=numdiff.float64).scatter_reduce(0, numdiff.tensor([0, 0, 0]), numdiff.tensor(ties), reduce, include_self=False)
    assert ours.tolist() == [0.1]


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: numdiff.ones(3).scatter_reduce(0, numdiff.tensor([0]), numdiff.ones(1), "max"), ValueError, "scatter_reduce: reduce must"),
        (lambda: numdiff.ones(3).scatter_reduce(0, numdiff.tensor([3]), numdiff.ones(1), "sum"), IndexError, "scatter_reduce: index values"),
        (lambda: numdiff.ones(3).scatter_reduce(0, numdiff.tensor([0]), numdiff.ones(1, dtype=numdiff.float64), "sum"), TypeError, "scatter_reduce: src"),
        (lambda: numdiff.ones(3, requires_grad=True).scatter_reduce(0, numdiff.tensor([-1]), numdiff.ones(1), "prod"), IndexError, "scatter_reduce: index values"),
    ],
)
def test_scatter_reduce_refuses_bad_input_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_scatter_reduce_under_vmap_matches_torch_func():
    x = RNG.standard_normal((4, 3, 4))
    index = SCATTER_INDEX

    def ours(a):
        return a.scatter_reduce(1, numdiff.tensor(index), a * 2, "amax", include_self=False)

    def theirs(a):
        return a.scatter_reduce(1, torch.tensor(index), a * 2, "amax", include_self=False)

    with pytest.warns(Warning):
        batched = numdiff.vmap(ours)(numdiff.tensor(x))
    np.testing.assert_allclose(batched.numpy(), torch.vmap(theirs)(torch.tensor(x)).numpy())
