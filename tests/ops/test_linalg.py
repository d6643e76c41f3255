"""matmul, mm, bmm, dot, outer and linear against torch 2.13 (forward and gradients, randomized
broadcast shapes, both float dtypes), on non-contiguous inputs, and on bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numdiff

torch = pytest.importorskip("torch")
F = numdiff.nn.functional
TOL = {np.float64: dict(rtol=1e-9, atol=1e-12), np.float32: dict(rtol=2e-4, atol=2e-5)}


def _parity(fn_ours, fn_torch, arrays, dtype):
    """Forward and every input gradient (for a random upstream gradient) against torch."""
    ours = [numdiff.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    out, expected = fn_ours(*ours), fn_torch(*theirs)
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), **TOL[dtype])
    upstream = np.random.default_rng(0).standard_normal(tuple(expected.shape)).astype(dtype)
    out.backward(numdiff.tensor(upstream))
    expected.backward(torch.tensor(upstream))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **TOL[dtype])


batch = st.lists(st.integers(1, 3), min_size=0, max_size=2)


@settings(max_examples=30, deadline=None)
@given(
    batch_a=batch,
    batch_b=batch,
    m=st.integers(1, 4),
    k=st.integers(1, 4),
    n=st.integers(1, 4),
    vector_a=st.booleans(),
    vector_b=st.booleans(),
    broadcast=st.data(),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_matmul_matches_torch_on_random_broadcast_shapes(
    batch_a, batch_b, m, k, n, vector_a, vector_b, broadcast, dtype
):
    # Make the batch shapes broadcastable by setting some dims to 1.
    length = min(len(batch_a), len(batch_b))
    for i in range(1, length + 1):
        if batch_a[-i] != batch_b[-i] and broadcast.draw(st.booleans()):
            batch_a[-i] = 1
        elif batch_a[-i] != batch_b[-i]:
            batch_b[-i] = 1
    shape_a = (k,) if vector_a else tuple(batch_a) + (m, k)
    shape_b = (k,) if vector_b else tuple(batch_b) + (k, n)
    rng = np.random.default_rng(len(shape_a) * 10 + len(shape_b))
    arrays = [rng.standard_normal(shape_a), rng.standard_normal(shape_b)]
    _parity(numdiff.matmul, torch.matmul, arrays, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 3), (2, 5, 3), (3,)], ids=["2d", "3d", "1d"])
def test_linear_matches_torch(dtype, shape):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(shape), rng.standard_normal((2, 3)), rng.standard_normal(2)]
    _parity(F.linear, torch.nn.functional.linear, arrays, dtype)


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("x_needs_grad", [True, False])
def test_linear_first_order_backward_matches_the_recorded_form(with_bias, x_needs_grad):
    # Without create_graph Linear's backward runs its products on arrays; with it, as recorded
    # ops. Same gradients, also for a strided 3-D input and a weight stored transposed.
    rng = np.random.default_rng(11)
    x_data, w_data, b_data = rng.standard_normal((5, 2, 3)), rng.standard_normal((3, 4)), rng.standard_normal(4)
    seed = numdiff.tensor(rng.standard_normal((2, 5, 4)))
    results = []
    for create_graph in (False, True):
        x = numdiff.tensor(x_data, requires_grad=x_needs_grad)
        w = numdiff.tensor(w_data, requires_grad=True)
        b = numdiff.tensor(b_data, requires_grad=True) if with_bias else None
        leaves = [t for t in (x, w, b) if t is not None and t.requires_grad]
        strided_x, transposed_w = x.transpose(0, 1), w.T  # (2, 5, 3) and (4, 3), both views
        assert not strided_x.is_contiguous() and not transposed_w.is_contiguous()
        out = F.linear(strided_x, transposed_w, b)
        grads = numdiff.autograd.grad(out, leaves, seed, create_graph=create_graph)
        results.append([g.detach().numpy() for g in grads])
    for first_order, recorded in zip(*results):
        np.testing.assert_allclose(first_order, recorded, rtol=1e-12, atol=1e-12)


def test_mm_bmm_dot_outer_match_torch():
    rng = np.random.default_rng(2)
    _parity(numdiff.mm, torch.mm, [rng.standard_normal((3, 4)), rng.standard_normal((4, 2))], np.float64)
    _parity(
        numdiff.bmm, torch.bmm, [rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 2))], np.float64
    )
    _parity(numdiff.dot, torch.dot, [rng.standard_normal(5), rng.standard_normal(5)], np.float64)
    _parity(numdiff.outer, torch.outer, [rng.standard_normal(3), rng.standard_normal(4)], np.float64)


def test_matmul_operator_and_tensor_methods_match_torch():
    rng = np.random.default_rng(7)
    a, b, v = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal(4)
    _parity(lambda x, y: x @ y, lambda x, y: x @ y, [a, b], np.float64)
    _parity(lambda x, y: x.matmul(y), lambda x, y: x.matmul(y), [a, b], np.float64)
    _parity(lambda x, y: x.mm(y), lambda x, y: x.mm(y), [a, b], np.float64)
    _parity(lambda x, y: x.dot(y), lambda x, y: x.dot(y), [v, v], np.float64)
    _parity(lambda x, y: x.outer(y), lambda x, y: x.outer(y), [v, a[0, :3]], np.float64)
    batches = [rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 2))]
    _parity(lambda x, y: x.bmm(y), lambda x, y: x.bmm(y), batches, np.float64)


@pytest.mark.parametrize(
    "view",
    [lambda t: t.mT, lambda t: t[:, ::2], lambda t: t.permute(1, 0)[1:]],
    ids=["transposed", "strided", "permuted-slice"],
)
def test_non_contiguous_operands_give_the_same_result_and_gradient(view):
    rng = np.random.default_rng(3)
    base_a, base_b = rng.standard_normal((6, 6)), rng.standard_normal((6, 6))

    def ours(a, b):
        return numdiff.matmul(view(a), view(b).mT)

    def theirs(a, b):
        return torch.matmul(view(a), view(b).mT)

    _parity(ours, theirs, [base_a, base_b], np.float64)


def test_second_derivative_of_a_product_matches_torch():
    rng = np.random.default_rng(4)
    a0, b0 = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 2))
    a, b = numdiff.tensor(a0, requires_grad=True), numdiff.tensor(b0, requires_grad=True)
    ta, tb = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    (ga,) = numdiff.autograd.grad((numdiff.matmul(a, b) ** 2).sum(), a, create_graph=True)
    (tga,) = torch.autograd.grad((torch.matmul(ta, tb) ** 2).sum(), ta, create_graph=True)
    (ga * ga).sum().backward()
    (tga * tga).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-9)


def test_integer_matmul_is_computed_without_gradient():
    a = numdiff.tensor(np.arange(6).reshape(2, 3))
    out = numdiff.matmul(a, numdiff.tensor(np.ones((3, 2), dtype=np.int64)))
    assert out.dtype == numdiff.int64 and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), np.arange(6).reshape(2, 3) @ np.ones((3, 2), dtype=np.int64))


def test_matmul_with_an_empty_dimension_gives_zeros():
    out = numdiff.matmul(numdiff.ones(2, 0), numdiff.ones(0, 3))
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 3)))


def test_matmul_rejects_size_mismatch_naming_both_shapes():
    with pytest.raises(
        ValueError, match=r"matmul: size mismatch, input \(2, 3\) has 3 columns but other \(4, 2\)"
    ):
        numdiff.matmul(numdiff.ones(2, 3), numdiff.ones(4, 2))


def test_matmul_rejects_unbroadcastable_batches():
    with pytest.raises(ValueError, match="matmul"):
        numdiff.matmul(numdiff.ones(2, 3, 4), numdiff.ones(3, 4, 5))


def test_matmul_rejects_mixed_dtypes():
    with pytest.raises(
        TypeError,
        match="matmul: expected both operands to have the same dtype, got numdiff.float32 and numdiff.float64",
    ):
        numdiff.matmul(numdiff.ones(2, 2), numdiff.ones(2, 2, dtype=numdiff.float64))


def test_matmul_rejects_zero_dimensional_operands():
    with pytest.raises(ValueError, match="matmul: both arguments need at least 1 dimension"):
        numdiff.matmul(numdiff.tensor(2.0), numdiff.ones(2))


def test_mm_bmm_dot_outer_reject_wrong_ranks():
    with pytest.raises(ValueError, match=r"mm: both arguments must be 2-D matrices, got shapes \(2, 2, 2\)"):
        numdiff.mm(numdiff.ones(2, 2, 2), numdiff.ones(2, 2))
    with pytest.raises(ValueError, match=r"bmm: batch sizes differ, input \(2, 2, 3\) and mat2 \(3, 3, 2\)"):
        numdiff.bmm(numdiff.ones(2, 2, 3), numdiff.ones(3, 3, 2))
    with pytest.raises(ValueError, match="dot: lengths differ, 3 and 4"):
        numdiff.dot(numdiff.ones(3), numdiff.ones(4))
    with pytest.raises(ValueError, match="outer: both arguments must be 1-D"):
        numdiff.outer(numdiff.ones(3, 1), numdiff.ones(4))


def test_linear_rejects_feature_mismatch_and_bad_bias():
    with pytest.raises(
        ValueError, match=r"linear: input \(4, 3\) must end with in_features=5 \(weight \(2, 5\)\)"
    ):
        F.linear(numdiff.ones(4, 3), numdiff.ones(2, 5))
    with pytest.raises(ValueError, match=r"linear: bias must have shape \(2,\), got \(3,\)"):
        F.linear(numdiff.ones(4, 3), numdiff.ones(2, 3), numdiff.ones(3))
    with pytest.raises(TypeError, match="linear: input is numdiff.float32 but weight is numdiff.float64"):
        F.linear(numdiff.ones(4, 3), numdiff.ones(2, 3, dtype=numdiff.float64))


def test_matmul_with_an_expanded_batch_operand_matches_a_copied_one():
    # An operand whose batch is a stride-0 broadcast of one matrix (vmap's shared weights) takes
    # the no-copy fold path; values and per-entry gradients must equal those of a real copy.
    rng = np.random.default_rng(5)
    a_data, shared = rng.standard_normal((4, 2, 3)), rng.standard_normal((5, 3))
    cotangent = numdiff.tensor(rng.standard_normal((4, 2, 5)))
    results = []
    for expanded in (True, False):
        a = numdiff.tensor(a_data, requires_grad=True)
        b = numdiff.tensor(shared).t().unsqueeze(0).expand(4, 3, 5)
        b = (b if expanded else b.clone()).detach().requires_grad_()
        out = numdiff.matmul(a, b)
        (out * cotangent).sum().backward()
        results.append((out.detach().numpy(), a.grad.numpy(), b.grad.numpy()))
    np.testing.assert_allclose(results[0][0], a_data @ shared.T, rtol=1e-12)
    for fast, copied in zip(results[0], results[1]):
        np.testing.assert_allclose(fast, copied, rtol=1e-12)


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("a_form", ["2d", "expanded"])
def test_a_shared_matrix_times_a_batch_matches_numpy_and_a_copied_matrix(n, a_form):
    # A first operand whose batch is one matrix (a weight against vmapped vectors) is one GEMM of
    # b's rows by the matrix's transpose, written in place when n == 1; b here is strided.
    rng = np.random.default_rng(6)
    shared, b_full = rng.standard_normal((6, 5)), rng.standard_normal((3, 4, n, 10))
    b_data = b_full[..., ::2]
    cotangent = numdiff.tensor(rng.standard_normal((3, 4, 6, n)))
    results = []
    for copied in (False, True):
        a = numdiff.tensor(shared)
        a = a.expand(3, 4, 6, 5) if a_form == "expanded" or copied else a
        a = (a.clone() if copied else a).detach().requires_grad_()
        b = numdiff.tensor(b_full)[..., ::2].transpose(-1, -2).detach().requires_grad_()
        assert not b.is_contiguous()
        out = numdiff.matmul(a, b)
        (out * cotangent).sum().backward()
        results.append((out.detach().numpy(), b.grad.numpy()))
    np.testing.assert_allclose(results[0][0], shared @ b_data.swapaxes(-1, -2), rtol=1e-12)
    for fast, slow in zip(*results):
        np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12)
    x = numdiff.tensor(shared, requires_grad=True)
    y = numdiff.tensor(b_data.swapaxes(-1, -2).copy(), requires_grad=True)
    assert numdiff.autograd.gradcheck(numdiff.matmul, (x, y))
