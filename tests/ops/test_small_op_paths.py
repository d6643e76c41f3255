"""The short paths small-tensor programs take (a batch-1 layer's GEMM, an integer index into a
sequence, cat's first-order backward, the last-axis softmax view) give what the general paths
give, bit for bit, and refuse what those refuse."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.ops.activation import _lines

torch = pytest.importorskip("torch")
F = numdiff.nn.functional


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, in_features, out_features", [(1, 185, 128), (3, 7, 5), (2, 1, 4), (2, 6, 1)])
def test_linear_of_contiguous_rows_equals_the_general_layouts(dtype, rows, in_features, out_features):
    # C-contiguous 2-D rows take one direct gemm_nt; a Fortran-ordered copy and a (1, rows, in)
    # batch take the general path. Same products, same bits, and torch's values.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((rows, in_features)).astype(dtype)
    w = numdiff.tensor(rng.standard_normal((out_features, in_features)).astype(dtype))
    b = numdiff.tensor(rng.standard_normal(out_features).astype(dtype))
    direct = F.linear(numdiff.tensor(x), w, b).numpy()
    fortran = F.linear(numdiff.tensor(np.asfortranarray(x)), w, b).numpy()
    batched = F.linear(numdiff.tensor(x[None]), w, b).numpy()[0]
    assert direct.dtype == dtype
    np.testing.assert_array_equal(direct, fortran)
    np.testing.assert_array_equal(direct, batched)
    expected = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w.numpy()), torch.tensor(b.numpy()))
    tol = dict(rtol=1e-9, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(direct, expected.numpy(), **tol)


def test_linear_of_contiguous_rows_gradcheck_float64():
    rng = np.random.default_rng(6)
    x = numdiff.tensor(rng.standard_normal((1, 6)), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal((4, 6)), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal(4), requires_grad=True)
    assert numdiff.autograd.gradcheck(F.linear, (x, w, b))


def test_linear_of_contiguous_rows_refuses_a_feature_mismatch_before_the_kernel():
    with pytest.raises(ValueError, match=r"linear: input \(1, 5\) must end with in_features=6"):
        F.linear(numdiff.ones(1, 5), numdiff.ones(4, 6))
    with pytest.raises(ValueError, match=r"gemm_nt: b must have shape \(\*, 5\), got \(4, 6\)"):
        numdiff.ops.linalg.Linear.apply(numdiff.ones(1, 5), numdiff.ones(4, 6), None)


def test_an_integer_index_in_bounds_is_a_view_and_out_of_bounds_names_the_shape():
    x = numdiff.tensor(np.arange(24.0).reshape(4, 1, 6), requires_grad=True)
    for t in (0, 3, -1, -4):
        step = x[t]
        np.testing.assert_array_equal(step.detach().numpy(), x.detach().numpy()[t])
        assert step._base is x  # shares the version counter: in-place edits of x are seen
    x[-1].sum().backward()
    expected = np.zeros((4, 1, 6))
    expected[-1] = 1
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    for bad in (4, -5):
        with pytest.raises(IndexError, match=rf"index: index \[{bad}\] is invalid for a tensor of shape \(4, 1, 6\)"):
            x[bad]
    with pytest.raises(IndexError, match="index"):
        numdiff.tensor(1.0)[0]  # a 0-d tensor has no dimension to index


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_first_order_backward_equals_the_recorded_one(dim):
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((2, 3)), rng.standard_normal((2, 3)), rng.standard_normal((2, 3))]
    seed = numdiff.tensor(rng.standard_normal(numdiff.cat([numdiff.tensor(a) for a in arrays], dim).shape))
    results = []
    for create_graph in (False, True):
        parts = [numdiff.tensor(a, requires_grad=i != 1) for i, a in enumerate(arrays)]
        out = numdiff.cat(parts, dim)
        leaves = [parts[0], parts[2]]
        grads = numdiff.autograd.grad(out, leaves, seed, create_graph=create_graph)
        results.append([g.detach().numpy() for g in grads])
    for first_order, recorded in zip(*results):
        np.testing.assert_array_equal(first_order, recorded)


def test_cat_first_order_gradients_do_not_alias_each_other_or_the_seed():
    # The pieces are views of one gradient array: accumulating into .grad must copy them.
    x = numdiff.zeros(2, 3, requires_grad=True)
    seed = numdiff.ones(2, 6)
    numdiff.cat([x, x], 1).backward(seed)
    numdiff.cat([x, x], 1).backward(seed)
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 4.0))
    np.testing.assert_array_equal(seed.numpy(), np.ones((2, 6)))


@pytest.mark.parametrize("shape, dim", [((2, 5), 1), ((5,), 0), ((), 0), ((2, 0), 1), ((3, 4, 2), 2), ((3, 4, 2), 1)])
def test_softmax_lines_view_matches_the_general_products(shape, dim):
    size = int(np.prod(shape)) if shape else 1
    n = (shape or (1,))[dim]
    before = int(np.prod((shape or (1,))[:dim]))
    inner = size // (before * n) if before * n else int(np.prod(shape[dim + 1:]))
    rows = dim == len(shape or (1,)) - 1 and n > 0  # along the last dim: rows (outer, n), no inner
    assert _lines(shape, dim) == ((before, n) if rows else (before, n, inner))


def test_log_softmax_of_a_row_matches_torch_and_gradchecks():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 18))
    ours = F.log_softmax(numdiff.tensor(x), dim=1).numpy()
    np.testing.assert_allclose(ours, torch.log_softmax(torch.tensor(x), 1).numpy(), rtol=1e-12, atol=1e-12)
    t = numdiff.tensor(x, requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda v: F.log_softmax(v, dim=1), (t,))
    with pytest.raises(IndexError, match="log_softmax: dimension 2 is out of range"):
        F.log_softmax(numdiff.tensor(x), dim=2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_, np.uint8])
def test_zero_in_place_on_an_untracked_tensor_writes_the_storage_and_bumps_the_version(dtype):
    x = numdiff.tensor(np.arange(1, 7).reshape(2, 3).astype(dtype))
    view = x[1]
    version = x._version
    assert x.zero_() is x
    np.testing.assert_array_equal(x.numpy(), np.zeros((2, 3), dtype))
    np.testing.assert_array_equal(view.numpy(), np.zeros(3, dtype))  # the storage itself was written
    assert x._version == version + 1 and view._version == x._version


def test_zero_in_place_keeps_the_recorded_rules():
    w = numdiff.ones(3, requires_grad=True)
    with pytest.raises(numdiff.autograd.function.InPlaceOnLeafError, match="zero_: a leaf tensor of shape"):
        w.zero_()
    with numdiff.no_grad():
        w.zero_()
    np.testing.assert_array_equal(w.detach().numpy(), np.zeros(3))
    y = w * 2
    y.zero_()  # recorded: the gradient through the zeroed value is 0
    (y + w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.ones(3))
    with pytest.raises(RuntimeError, match="zero_: cannot write in place .* an expanded view"):
        numdiff.ones(3).expand(2, 3).zero_()
    p = numdiff.ones(2, 2, requires_grad=True)
    (p * 3).sum().backward()
    p.grad.zero_()  # what optimizers and hand-written loops call
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros((2, 2)))


_IN_PLACE = [
    ("add_", lambda a, b: a + b), ("sub_", lambda a, b: a - b), ("mul_", lambda a, b: a * b),
    ("div_", lambda a, b: a / b), ("__iadd__", lambda a, b: a + b), ("__isub__", lambda a, b: a - b),
    ("__imul__", lambda a, b: a * b), ("__itruediv__", lambda a, b: a / b),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("method, out_of_place", _IN_PLACE, ids=[m for m, _ in _IN_PLACE])
def test_in_place_arithmetic_on_untracked_tensors_equals_the_out_of_place_op(dtype, method, out_of_place):
    # Written straight into the storage: the out-of-place op's bits, the storage shared with views,
    # and one version bump.
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((3, 5)).astype(dtype), rng.uniform(0.5, 2.0, (3, 5)).astype(dtype)
    expected = out_of_place(numdiff.tensor(a), numdiff.tensor(b)).numpy()
    x = numdiff.tensor(a.copy())
    row = x[0]
    version = x._version
    result = getattr(x, method)(numdiff.tensor(b))
    assert result is x
    np.testing.assert_array_equal(x.numpy(), expected)
    np.testing.assert_array_equal(row.numpy(), expected[0])
    assert x._version == version + 1
    np.testing.assert_allclose(x.numpy(), out_of_place(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("method", ["add_", "sub_"])
def test_in_place_add_and_sub_with_alpha_round_as_the_out_of_place_op(method):
    # The hand-written SGD step of PyTorch's tutorials: p.data.add_(p.grad, alpha=-lr).
    rng = np.random.default_rng(10)
    p = numdiff.tensor(rng.standard_normal((4, 6)).astype(np.float32), requires_grad=True)
    g = numdiff.tensor(rng.standard_normal((4, 6)).astype(np.float32))
    expected = getattr(numdiff, method[:-1])(p.detach(), g, alpha=-0.005).numpy()
    getattr(p.data, method)(g, alpha=-0.005)
    np.testing.assert_array_equal(p.detach().numpy(), expected)
    with numdiff.no_grad():
        p -= 0.5 * g  # the other spelling of the same loop
    np.testing.assert_array_equal(p.detach().numpy(), expected - np.float32(0.5) * g.numpy())


def test_in_place_arithmetic_outside_the_short_path_keeps_its_rules():
    x = numdiff.ones(2, 3)
    x += numdiff.tensor([1.0, 2.0, 3.0])  # broadcast: the general path
    np.testing.assert_array_equal(x.numpy(), [[2.0, 3.0, 4.0]] * 2)
    w = numdiff.ones(3, requires_grad=True)
    with pytest.raises(numdiff.autograd.function.InPlaceOnLeafError, match="__iadd__: a leaf tensor"):
        w += numdiff.ones(3)
    h = numdiff.zeros(3)
    h += w * 2  # a tracked value: recorded, so the gradient reaches w
    h.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 2.0))
    with pytest.raises(RuntimeError, match="__isub__: cannot write in place .* an expanded view"):
        e = numdiff.ones(3).expand(2, 3)
        e -= numdiff.ones(2, 3)
    with pytest.raises(TypeError):
        numdiff.ones(3).mul_(numdiff.ones(3), alpha=2)  # mul_ takes no alpha, on either path
    i = numdiff.tensor([1, 2, 3])
    i += numdiff.tensor([1, 1, 1])  # integers: the general path
    assert i.tolist() == [2, 3, 4]


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax"])
@pytest.mark.parametrize("dims, keepdim", [(None, False), ((1,), False), ((0, 2), True), ((1,), True)])
def test_first_order_reduction_backward_equals_the_recorded_one(reduce, dims, keepdim):
    # Without create_graph the reduced gradient is broadcast back on arrays; with it, by ops.
    rng = np.random.default_rng(12)
    x_data = rng.standard_normal((2, 3, 4))
    results = []
    for create_graph in (False, True):
        x = numdiff.tensor(x_data, requires_grad=True)
        fn = getattr(numdiff, reduce)
        out = fn(x) if dims is None else fn(x, dim=dims, keepdim=keepdim)
        seed = numdiff.tensor(np.linspace(-1.0, 1.0, out.numel()).reshape(tuple(out.shape)))
        (grad,) = numdiff.autograd.grad(out, [x], seed, create_graph=create_graph)
        results.append(grad.detach().numpy())
    np.testing.assert_array_equal(results[0], results[1])
    t = torch.tensor(x_data, requires_grad=True)
    expected = getattr(torch, reduce)(t) if dims is None else getattr(torch, reduce)(t, dim=dims, keepdim=keepdim)
    expected.backward(torch.tensor(seed.numpy()))
    np.testing.assert_allclose(results[0], t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_relu_sum_backward_gives_ones_where_positive_and_gradchecks():
    rng = np.random.default_rng(13)
    x = numdiff.tensor(rng.standard_normal((32, 16, 8, 8)).astype(np.float32), requires_grad=True)
    numdiff.relu(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (x.detach().numpy() > 0).astype(np.float32))
    x.grad.numpy()[0, 0, 0, 0] = 5.0  # .grad owns its memory: the broadcast gradient was copied
    small = numdiff.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda v: v.sum(dim=1), (small,))


def test_linear_of_rows_the_checks_would_refuse_still_reaches_them():
    # The direct product skips gemm_nt's checks only where Linear has made them itself: mixed
    # dtypes (Linear.apply called without linear()'s checks) still get gemm_nt's error.
    with pytest.raises(TypeError, match="gemm_nt: all arrays must share one dtype"):
        numdiff.ops.linalg.Linear.apply(numdiff.ones(1, 5), numdiff.ones(4, 5, dtype=numdiff.float64), None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows", [1, 3])
def test_linear_first_order_backward_equals_the_recorded_one_and_torch(dtype, rows):
    # The first-order backward calls the products directly; with create_graph it records Matmul
    # ops. Both give torch's gradients.
    rng = np.random.default_rng(rows)
    arrays = [rng.standard_normal(s).astype(dtype) for s in ((rows, 185), (128, 185), (128,), (rows, 128))]
    x, w, b = (numdiff.tensor(a, requires_grad=True) for a in arrays[:3])
    F.linear(x, w, b).backward(numdiff.tensor(arrays[3]))
    x2, w2, b2 = (numdiff.tensor(a, requires_grad=True) for a in arrays[:3])
    recorded = numdiff.autograd.grad(F.linear(x2, w2, b2), (x2, w2, b2), numdiff.tensor(arrays[3]), create_graph=True)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in arrays[:3])
    torch.nn.functional.linear(tx, tw, tb).backward(torch.tensor(arrays[3]))
    tol = dict(rtol=1e-9, atol=1e-10) if dtype == np.float64 else dict(rtol=2e-4, atol=1e-4)
    for eager, graph, reference in zip((x.grad, w.grad, b.grad), recorded, (tx.grad, tw.grad, tb.grad)):
        assert eager.dtype == graph.dtype == numdiff.tensor(arrays[0]).dtype
        np.testing.assert_allclose(eager.numpy(), graph.detach().numpy(), **tol)
        np.testing.assert_allclose(eager.numpy(), reference.numpy(), **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows", [1, 5])
def test_linear_backward_of_one_needed_product_equals_both_products_bit_for_bit(dtype, rows):
    # A first layer (input without grad) needs only the weight gradient, a frozen layer only the
    # input's: each single product gives the bits of the paired call, and torch's values.
    rng = np.random.default_rng(rows + 11)
    x, w, b, seed = (rng.standard_normal(s).astype(dtype) for s in ((rows, 9), (7, 9), (7,), (rows, 7)))

    def grads(x_needs, w_needs):
        xt = numdiff.tensor(x, requires_grad=x_needs)
        wt = numdiff.tensor(w, requires_grad=w_needs)
        F.linear(xt, wt, numdiff.tensor(b, requires_grad=True)).backward(numdiff.tensor(seed))
        return xt.grad, wt.grad

    both_x, both_w = grads(True, True)
    _, only_w = grads(False, True)
    only_x, _ = grads(True, False)
    assert only_w.numpy().tobytes() == both_w.numpy().tobytes()
    assert only_x.numpy().tobytes() == both_x.numpy().tobytes()
    tol = dict(rtol=1e-9, atol=1e-10) if dtype == np.float64 else dict(rtol=2e-4, atol=1e-4)
    np.testing.assert_allclose(only_w.numpy(), seed.T.astype(np.float64) @ x, **tol)
    np.testing.assert_allclose(only_x.numpy(), seed.astype(np.float64) @ w, **tol)
