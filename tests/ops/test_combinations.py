"""median, nanmedian, mode, kron, cartesian_prod, block_diag, histc, logcumsumexp, unfold and fold
against PyTorch: values and indices (NaN, ties, keepdim, 0-d), gradients, and the errors for bad
arguments. (Gradient checks against central differences: tests/ops/cases_combinations.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf

torch = pytest.importorskip("torch")
NAN = float("nan")
INF = float("inf")


def _pair(ours, theirs):
    np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
    np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_medians_match_torch_with_nans_and_keepdim(name):
    x = np.array([[3.0, 1.0, NAN, 2.0], [4.0, 1.0, 2.0, 3.0], [NAN, 0.5, NAN, NAN], [NAN, 5.0, NAN, -1.0]])
    ours, theirs = getattr(numdiff, name), getattr(torch, name)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            _pair(ours(numdiff.tensor(x), dim, keepdim), theirs(torch.tensor(x), dim, keepdim))
    # An all-NaN slice: NaN (which NaN's index torch reports is not specified).
    assert np.isnan(ours(numdiff.tensor([[NAN, NAN, NAN]]), 1).values.item())
    np.testing.assert_array_equal(ours(numdiff.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())
    np.testing.assert_array_equal(ours(numdiff.tensor(x[1])).numpy(), theirs(torch.tensor(x[1])).numpy())
    _pair(ours(numdiff.tensor(2.5), 0), theirs(torch.tensor(2.5), 0))
    ints = np.array([[5, 1, 4], [2, 2, 9]])
    _pair(ours(numdiff.tensor(ints), 1), theirs(torch.tensor(ints), 1))


def test_median_gradient_goes_to_the_element_picked():
    x = np.array([[3.0, 1.0, 2.0, 4.0], [0.5, 0.25, 9.0, 8.0]])
    leaf, reference = numdiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (numdiff.median(leaf, 1).values * numdiff.tensor([1.0, 2.0])).sum().backward()
    (torch.median(reference, 1).values * torch.tensor([1.0, 2.0])).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), reference.grad.numpy())


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize(
    "values",
    [
        [2.0, 1.0, 2.0, 3.0],
        [1.0, 1.0, 1.0],
        [3.0, 2.0, 3.0, 2.0, 1.0, 2.0],
        [NAN, 1.0, 2.0, 1.0],
        [-0.0],
        [0.0, -0.0, 5.0],
        [1.0, INF, INF],
        [INF, INF, INF, 1.0, 2.0],
        [-INF, -INF, -INF, 1.0],
        [-INF, 1.0, INF],
        [1.0, INF, 2.0],
        [NAN, NAN, 1.0],
        [NAN, NAN, 1.0, 1.0],
        [NAN, NAN],
    ],
)
def test_a_whole_tensor_median_shares_its_gradient_among_equal_elements_like_torch(name, values):
    leaf, reference = numdiff.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    ours, theirs = getattr(leaf, name)(), getattr(reference, name)()
    ours.backward()
    theirs.backward()
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    assert np.signbit(ours.item()) == np.signbit(theirs.item())
    np.testing.assert_array_equal(leaf.grad.numpy(), reference.grad.numpy())


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "float32", "float16", "bfloat16"])
def test_a_whole_tensor_median_keeps_the_input_dtype(dtype):
    values = [3, 1, 2, 2, 7]
    ours = numdiff.tensor(values, dtype=getattr(numdiff, dtype))
    theirs = torch.tensor(values, dtype=getattr(torch, dtype))
    for name in ("median", "nanmedian"):
        if name == "nanmedian" and dtype in ("int64", "int32", "uint8"):
            continue  # torch's nanmedian refuses integers
        result = getattr(ours, name)()
        assert result.dtype.name == dtype and result.item() == getattr(theirs, name)().item()


def test_a_whole_tensor_median_passes_gradcheck_and_gradgradcheck():
    x = numdiff.tensor([[0.3, 2.0, -1.0], [4.0, 0.7, 1.5]], dtype=numdiff.float64, requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: t.median() * t.sum(), (x,))
    assert numdiff.autograd.gradgradcheck(lambda t: t.nanmedian() * t.sum(), (x,))


def test_fmax_and_fmin_give_a_tie_gradient_to_input_and_skip_nan_like_torch():
    a = [0.0, 1.0, NAN, NAN, 2.0, -1.0]
    b = [0.0, NAN, 1.0, NAN, 3.0, -2.0]
    for name in ("fmax", "fmin"):
        ours = [numdiff.tensor(v, dtype=numdiff.float64, requires_grad=True) for v in (a, b)]
        theirs = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (a, b)]
        getattr(numdiff, name)(*ours).sum().backward()
        getattr(torch, name)(*theirs).sum().backward()
        np.testing.assert_array_equal(getattr(numdiff, name)(*ours).detach().numpy(), getattr(torch, name)(*theirs).detach().numpy())
        for mine, their in zip(ours, theirs):
            np.testing.assert_array_equal(mine.grad.numpy(), their.grad.numpy())
    x = numdiff.tensor([0.5, -1.0, 2.0], dtype=numdiff.float64, requires_grad=True)
    y = numdiff.tensor([1.0, -2.0, 0.0], dtype=numdiff.float64, requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda p, q: numdiff.fmax(p, q) * numdiff.fmin(p, q), (x, y))


def test_mode_takes_the_smallest_most_frequent_value_at_its_last_occurrence():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, (5, 9)).astype(np.float64)
    for dim in (0, 1):
        for keepdim in (False, True):
            _pair(numdiff.mode(numdiff.tensor(x), dim, keepdim), torch.mode(torch.tensor(x), dim, keepdim))
    _pair(numdiff.tensor([2.0, 1.0, 2.0, 1.0]).mode(), torch.tensor([2.0, 1.0, 2.0, 1.0]).mode())
    _pair(numdiff.mode(numdiff.tensor([[3, 3, 1, 1, 1]])), torch.mode(torch.tensor([[3, 3, 1, 1, 1]])))
    leaf, reference = numdiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    numdiff.mode(leaf, 1).values.sum().backward()
    torch.mode(reference, 1).values.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), reference.grad.numpy())


def test_kron_cartesian_prod_and_block_diag_match_torch():
    rng = np.random.default_rng(1)
    for a_shape, b_shape in [((2, 3), (3, 2)), ((2,), (3, 2)), ((2, 1, 3), (2, 2)), ((), (3,))]:
        a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
        np.testing.assert_allclose(numdiff.kron(numdiff.tensor(a), numdiff.tensor(b)).numpy(),
                                   torch.kron(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-15)
    ints = [np.array([1, 2]), np.array([3, 4, 5]), np.array([6])]
    assert numdiff.cartesian_prod(*map(numdiff.tensor, ints)).tolist() == torch.cartesian_prod(*map(torch.tensor, ints)).tolist()
    assert numdiff.cartesian_prod(numdiff.tensor([1, 2])).tolist() == [1, 2]
    blocks = [np.array([[1, 2]]), np.array(3.0), np.array([4, 5]), np.zeros((0, 2))]
    ours = numdiff.block_diag(*map(numdiff.tensor, blocks))
    theirs = torch.block_diag(*map(torch.tensor, blocks))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_histc_matches_torch(dtype):
    x = np.random.default_rng(2).standard_normal(2000).astype(dtype)
    for kwargs in [dict(bins=7), dict(bins=10, min=-1, max=2), dict(bins=1, min=0, max=0), dict(bins=4, min=-3, max=-3)]:
        ours = numdiff.histc(numdiff.tensor(x), **kwargs)
        theirs = torch.histc(torch.tensor(x), **kwargs)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert ours.dtype == numdiff.tensor(x).dtype and not ours.requires_grad
    edges = np.array([0.0, 1.0, 2.0, 3.0, -0.5, 3.5], dtype=dtype)
    np.testing.assert_array_equal(numdiff.tensor(edges).histc(bins=3, min=0, max=3).numpy(),
                                  torch.tensor(edges).histc(bins=3, min=0, max=3).numpy())


def test_logcumsumexp_matches_torch_over_a_wide_range_and_infinities():
    x = np.array([[-1000.0, 0.0, 1000.0, -np.inf, 3.0], [-np.inf, -np.inf, 2.0, np.inf, 1.0]])
    ours = numdiff.logcumsumexp(numdiff.tensor(x), 1).numpy()
    np.testing.assert_allclose(ours, torch.logcumsumexp(torch.tensor(x), 1).numpy(), rtol=1e-15)
    rng = np.random.default_rng(3)
    y, g = rng.standard_normal((3, 50)) * 40, rng.standard_normal((3, 50))
    leaf, reference = numdiff.tensor(y, requires_grad=True), torch.tensor(y, requires_grad=True)
    numdiff.logcumsumexp(leaf, -1).backward(numdiff.tensor(g))
    torch.logcumsumexp(reference, -1).backward(torch.tensor(g))
    np.testing.assert_allclose(leaf.grad.numpy(), reference.grad.numpy(), rtol=1e-10, atol=1e-12)


UNFOLD_ARGS = [
    dict(kernel_size=2), dict(kernel_size=(3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1)),
    dict(kernel_size=3, padding=2, stride=3), dict(kernel_size=(1, 4), stride=(1, 2)),
    # Taps that read only padding for some block rows, and a whole tap column in the padding.
    dict(kernel_size=(2, 3), dilation=(3, 2), padding=(3, 4), stride=(1, 3)), dict(kernel_size=3, padding=1),
    dict(kernel_size=(4, 1), dilation=2, padding=(0, 2), stride=(2, 5)),
]


@pytest.mark.parametrize("index", range(len(UNFOLD_ARGS)))
def test_unfold_and_fold_match_torch_with_gradients(index):
    kwargs = UNFOLD_ARGS[index]
    rng = np.random.default_rng(index)
    x = rng.standard_normal((2, 3, 7, 6))
    leaf, reference = numdiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours, theirs = nf.unfold(leaf, **kwargs), torch.nn.functional.unfold(reference, **kwargs)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    g = rng.standard_normal(tuple(ours.shape))
    ours.backward(numdiff.tensor(g))
    theirs.backward(torch.tensor(g))
    np.testing.assert_allclose(leaf.grad.numpy(), reference.grad.numpy(), rtol=1e-15)
    cols = rng.standard_normal(tuple(ours.shape))
    leaf, reference = numdiff.tensor(cols, requires_grad=True), torch.tensor(cols, requires_grad=True)
    folded, expected = nf.fold(leaf, (7, 6), **kwargs), torch.nn.functional.fold(reference, (7, 6), **kwargs)
    np.testing.assert_allclose(folded.detach().numpy(), expected.detach().numpy(), rtol=1e-14)
    h = rng.standard_normal(tuple(folded.shape))
    folded.backward(numdiff.tensor(h))
    expected.backward(torch.tensor(h))
    np.testing.assert_allclose(leaf.grad.numpy(), reference.grad.numpy(), rtol=1e-15)


def test_unfold_and_fold_modules_and_unbatched_inputs():
    x = np.arange(2 * 4 * 5, dtype=np.float32).reshape(2, 4, 5)
    unfold = numdiff.nn.Unfold(2, stride=(1, 2))
    assert "kernel_size=2" in repr(unfold)
    np.testing.assert_array_equal(unfold(numdiff.tensor(x)).numpy(), torch.nn.Unfold(2, stride=(1, 2))(torch.tensor(x)).numpy())
    cols = np.ones((8, 6), dtype=np.float32)
    fold = numdiff.nn.Fold((4, 5), 2, stride=(1, 2))
    np.testing.assert_array_equal(fold(numdiff.tensor(cols)).numpy(), torch.nn.Fold((4, 5), 2, stride=(1, 2))(torch.tensor(cols)).numpy())


def test_bad_arguments_name_the_function_and_the_values():
    x = numdiff.ones(1, 2, 3, 3)
    with pytest.raises(ValueError, match=r"unfold: a kernel of \(4, 4\) with dilation \(1, 1\) spans \(4, 4\), more than the padded size \(3, 3\)"):
        nf.unfold(x, 4)
    with pytest.raises(ValueError, match=r"unfold: expects a 3-D \(C, H, W\) or 4-D \(N, C, H, W\) input, got shape \(3, 3\)"):
        nf.unfold(numdiff.ones(3, 3), 2)
    with pytest.raises(ValueError, match=r"unfold: stride must be positive, got 0"):
        nf.unfold(x, 2, stride=0)
    with pytest.raises(ValueError, match=r"unfold: kernel_size must be an int or 2 ints, got \(1, 2, 3\)"):
        nf.unfold(x, (1, 2, 3))
    with pytest.raises(ValueError, match=r"fold: the input has 5 blocks \(shape \(1, 8, 5\)\), but output_size \(3, 3\) .* gives 2 x 2 = 4"):
        nf.fold(numdiff.ones(1, 8, 5), (3, 3), 2)
    with pytest.raises(ValueError, match=r"fold: the input's 6 rows \(shape \(1, 6, 4\)\) are not a multiple of kernel_size \(2, 2\) = 4"):
        nf.fold(numdiff.ones(1, 6, 4), (3, 3), 2)
    with pytest.raises(IndexError, match=r"median: cannot take it over dimension 1 of size 0 \(shape \(2, 0\)\)"):
        numdiff.median(numdiff.ones(2, 0), 1)
    assert np.isnan(numdiff.nanmedian(numdiff.ones(0)).item())  # NaN, as torch's
    with pytest.raises(IndexError, match=r"mode"):
        numdiff.mode(numdiff.ones(2, 3), 2)
    with pytest.raises(ValueError, match=r"cartesian_prod: expects 1-D tensors, got tensors\[1\] of shape \(2, 2\)"):
        numdiff.cartesian_prod(numdiff.ones(2), numdiff.ones(2, 2))
    with pytest.raises(TypeError, match=r"cartesian_prod: expects tensors of one dtype"):
        numdiff.cartesian_prod(numdiff.ones(2), numdiff.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"block_diag: expects tensors of at most 2 dimensions, got tensors\[0\] of shape \(1, 1, 1\)"):
        numdiff.block_diag(numdiff.ones(1, 1, 1))
    with pytest.raises(ValueError, match=r"histc: bins must be a positive int, got 0"):
        numdiff.histc(numdiff.ones(3), bins=0)
    with pytest.raises(ValueError, match=r"histc: max must be at least min, got min=2 and max=1"):
        numdiff.histc(numdiff.ones(3), min=2, max=1)
    with pytest.raises(TypeError, match=r"histc: expects a floating point tensor, got dtype"):
        numdiff.histc(numdiff.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"logcumsumexp: expects a floating point tensor, got dtype"):
        numdiff.logcumsumexp(numdiff.tensor([1, 2]), 0)
    with pytest.raises(TypeError, match=r"kron: argument 'input' must be a Tensor, not list"):
        numdiff.kron([1.0], numdiff.ones(2))


def test_compiled_function_replays_the_picks_on_new_values():
    def f(x):
        picks = numdiff.median(x, 1).values + numdiff.nanmedian(x, 0).values.sum() + numdiff.mode(x, 1).values
        return picks.sum() + numdiff.logcumsumexp(x, 1).sum() + numdiff.histc(x, bins=3).sum() * x.sum()

    compiled = numdiff.compile(f)
    rng = np.random.default_rng(4)
    for _ in range(3):
        values = rng.integers(-2, 3, (3, 5)).astype(np.float64)
        x, y = numdiff.tensor(values, requires_grad=True), numdiff.tensor(values, requires_grad=True)
        out, expected = compiled(x), f(y)
        out.backward()
        expected.backward()
        np.testing.assert_allclose(out.item(), expected.item(), rtol=1e-14)
        np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-14)


def test_logcumsumexp_under_vmap_and_jacrev():
    x = np.random.default_rng(5).standard_normal((4, 3, 5))
    batched = numdiff.func.vmap(lambda t: numdiff.logcumsumexp(t, 1))(numdiff.tensor(x)).numpy()
    np.testing.assert_array_equal(batched, np.stack([numdiff.logcumsumexp(numdiff.tensor(x[i]), 1).numpy() for i in range(4)]))
    jacobian = numdiff.func.jacrev(lambda t: numdiff.logcumsumexp(t, 0))(numdiff.tensor(x[0, 0]))
    expected = torch.func.jacrev(lambda t: torch.logcumsumexp(t, 0))(torch.tensor(x[0, 0]))
    np.testing.assert_allclose(jacobian.numpy(), expected.numpy(), rtol=1e-14)


def test_kthvalue_matches_torch_with_nan_and_ties_and_refuses_a_bad_k():
    # Which of several equal elements torch's selection returns varies; ours go in input order. So the
    # indices are compared with torch's where a row has no ties, and must point at the value anyway.
    values = np.array([[3.0, 1.0, 2.0, 5.0, 2.0], [np.nan, 0.0, 4.0, -1.0, 0.0], [np.nan, 7.0, 4.0, -1.0, 0.5]])
    for k in range(1, 6):
        ours = numdiff.kthvalue(numdiff.tensor(values), k, 1)
        theirs = torch.kthvalue(torch.tensor(values), k, 1)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        picked = np.take_along_axis(values, ours.indices.numpy()[:, None], 1)[:, 0]
        np.testing.assert_array_equal(picked, ours.values.numpy())
        assert ours.indices.tolist()[2] == theirs.indices.tolist()[2]  # the row without ties
        assert ours.indices.tolist()[0] == [1, 2, 4, 0, 3][k - 1]  # tied 2.0s in the input's order
    assert numdiff.kthvalue(numdiff.tensor(5.0), 1).indices.item() == 0
    with pytest.raises(IndexError, match=r"kthvalue: k=6 is out of range for dimension 1 of size 5 \(shape \(3, 5\)\)"):
        numdiff.kthvalue(numdiff.tensor(values), 6)
    with pytest.raises(IndexError, match="kthvalue: k=0 is out of range"):
        numdiff.tensor(values).kthvalue(0)
