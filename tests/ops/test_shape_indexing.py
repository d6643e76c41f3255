"""Shape and indexing ops against torch 2.13 on Hypothesis inputs (basic and advanced indices,
setitem, permutations, cat/stack, expand/repeat, gather/scatter_add); values and gradients."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import numdiff
from tests.ops.strategies import DTYPES, LAYOUTS, assert_close, leaf, shapes, upstream, values

torch = pytest.importorskip("torch")
torch.set_num_threads(1)


def _check(data, dtype, inputs, ours_fn, torch_fn):
    """Run both functions on the same arrays, compare outputs, backpropagate one upstream gradient."""
    ours_in = [leaf(a, data.draw(LAYOUTS, label="layout")) for a in inputs]
    torch_in = [torch.tensor(a, requires_grad=True) for a in inputs]
    out, tout = ours_fn(*ours_in), torch_fn(*torch_in)
    assert_close(out, tout, dtype)
    grad = upstream(data.draw, out.shape, dtype)
    out.backward(numdiff.tensor(grad))
    tout.backward(torch.tensor(grad))
    for ours, theirs in zip(ours_in, torch_in):
        assert_close(ours.grad, theirs.grad, dtype)


def _no_negative_steps(key) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return not any(isinstance(k, slice) and k.step is not None and k.step < 0 for k in parts)


@given(data=st.data())
def test_basic_indexing_matches_torch(data):
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(min_dims=1), label="shape")
    key = data.draw(hnp.basic_indices(shape, allow_newaxis=True).filter(_no_negative_steps), label="key")
    array = data.draw(values(dtype, shape), label="x")
    _check(data, dtype, [array], lambda x: x[key], lambda x: x[key])


@given(data=st.data())
def test_integer_array_indexing_with_repeats_matches_torch(data):
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(min_dims=1), label="shape")
    n = shape[0]
    index = data.draw(hnp.arrays(np.int64, st.integers(1, 5), elements=st.integers(-n, n - 1)), label="index")
    array = data.draw(values(dtype, shape), label="x")
    _check(data, dtype, [array], lambda x: x[numdiff.tensor(index)], lambda x: x[torch.tensor(index)])


@given(data=st.data())
def test_two_integer_arrays_index_like_torch(data):
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(min_dims=2), label="shape")
    rows = data.draw(hnp.arrays(np.int64, 3, elements=st.integers(0, shape[0] - 1)), label="rows")
    cols = data.draw(hnp.arrays(np.int64, 3, elements=st.integers(0, shape[1] - 1)), label="cols")
    array = data.draw(values(dtype, shape), label="x")
    _check(
        data,
        dtype,
        [array],
        lambda x: x[numdiff.tensor(rows), numdiff.tensor(cols)],
        lambda x: x[torch.tensor(rows), torch.tensor(cols)],
    )


@given(data=st.data())
def test_bool_mask_indexing_matches_torch(data):
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(min_dims=1), label="shape")
    mask_dims = data.draw(st.integers(1, len(shape)), label="mask dims")
    mask = data.draw(hnp.arrays(np.bool_, shape[:mask_dims]), label="mask")
    array = data.draw(values(dtype, shape), label="x")
    _check(data, dtype, [array], lambda x: x[numdiff.tensor(mask)], lambda x: x[torch.tensor(mask)])


@given(data=st.data())
def test_setitem_on_a_clone_matches_torch(data):
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(min_dims=1), label="shape")
    key = data.draw(hnp.basic_indices(shape, min_dims=1).filter(_no_negative_steps), label="key")
    target = np.empty(shape)[key].shape
    value_shape = data.draw(
        hnp.broadcastable_shapes(target, min_side=0, max_dims=len(target)).filter(
            lambda s: np.broadcast_shapes(s, target) == target
        ),
        label="value shape",
    )
    array = data.draw(values(dtype, shape), label="x")
    value = data.draw(values(dtype, value_shape), label="value")

    def assign(x, v):
        out = x * 1
        out[key] = v
        return out

    _check(data, dtype, [array, value], assign, assign)


@given(data=st.data())
def test_permute_transpose_flip_match_torch(data):
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(min_dims=1), label="shape")
    order = data.draw(st.permutations(range(len(shape))), label="order")
    flip_dims = data.draw(
        st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)), label="flip"
    )
    array = data.draw(values(dtype, shape), label="x")

    def run(x):
        y = x.permute(*order).flip(flip_dims)
        return y.transpose(0, -1) * 2

    _check(data, dtype, [array], run, run)


@given(data=st.data())
def test_reshape_view_flatten_of_any_layout_match_torch(data):
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(min_dims=1), label="shape")
    array = data.draw(values(dtype, shape), label="x")
    size = array.size
    new_shape = data.draw(
        st.sampled_from([(size,), (1, size), (size, 1), (-1,), (1, -1, 1)]), label="new shape"
    )
    _check(
        data,
        dtype,
        [array],
        lambda x: x.reshape(new_shape).flatten(),
        lambda x: x.reshape(new_shape).flatten(),
    )


@given(data=st.data())
def test_cat_and_stack_match_torch(data):
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(min_dims=1), label="shape")
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    lengths = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3), label="lengths")
    arrays = []
    for length in lengths:
        piece_shape = list(shape)
        piece_shape[dim] = length
        arrays.append(data.draw(values(dtype, tuple(piece_shape)), label="piece"))
    _check(data, dtype, arrays, lambda *xs: numdiff.cat(xs, dim), lambda *xs: torch.cat(xs, dim))
    same = [data.draw(values(dtype, shape), label="same") for _ in lengths]
    stack_dim = data.draw(st.integers(-len(shape) - 1, len(shape)), label="stack dim")
    _check(
        data, dtype, same, lambda *xs: numdiff.stack(xs, stack_dim), lambda *xs: torch.stack(xs, stack_dim)
    )


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2, -3])
def test_stack_is_new_memory_that_in_place_edits_and_gradients_pass_through(dim):
    # stack joins along an existing dim by cat and a reshape: the result must still be its own
    # tensor (no view of the joined array), take in-place edits, and send every piece its rows.
    rng = np.random.default_rng(3)
    pieces = [rng.standard_normal((2, 3)) for _ in range(3)]
    weight = rng.standard_normal(torch.stack([torch.tensor(p) for p in pieces], dim).shape)
    grads = {}
    for lib in (numdiff, torch):
        xs = [lib.tensor(p, requires_grad=True) for p in pieces]
        out = lib.stack(xs, dim)
        assert out._base is None
        edited = out * 1
        edited.mul_(2.0)
        (edited * lib.tensor(weight)).sum().backward()
        grads[lib.__name__] = [x.grad.numpy() for x in xs]
        np.testing.assert_array_equal(np.asarray(out.detach().numpy()), np.stack(pieces, dim))
    for mine, theirs in zip(grads["numdiff"], grads["torch"]):
        np.testing.assert_array_equal(mine, theirs)


def test_stack_of_unequal_shapes_names_the_entries():
    with pytest.raises(ValueError, match=r"stack: .*\(2, 3\) at entry 0 and \(3, 2\) at entry 1"):
        numdiff.stack([numdiff.zeros(2, 3), numdiff.zeros(3, 2)], 1)


@given(data=st.data())
def test_expand_and_repeat_match_torch(data):
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(max_dims=2, max_side=3), label="shape")
    target = data.draw(
        hnp.broadcastable_shapes(shape, min_dims=len(shape), max_dims=3, max_side=3).map(
            lambda s: tuple(np.broadcast_shapes(s, shape))
        ),
        label="target",
    )
    repeats = data.draw(
        st.lists(st.integers(1, 3), min_size=max(1, len(shape)), max_size=len(shape) + 1), label="repeats"
    )
    array = data.draw(values(dtype, shape), label="x")
    _check(data, dtype, [array], lambda x: x.expand(target) * 1, lambda x: x.expand(target) * 1)
    _check(data, dtype, [array], lambda x: x.repeat(*repeats), lambda x: x.repeat(*repeats))


@given(data=st.data())
def test_split_chunk_squeeze_unsqueeze_match_torch(data):
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(min_dims=1, min_side=1, max_side=5), label="shape")
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    size = data.draw(st.integers(1, 3), label="split size")
    chunks = data.draw(st.integers(1, 4), label="chunks")
    array = data.draw(values(dtype, shape), label="x")

    def run(m, x):
        pieces = x.split(size, dim) + m.chunk(x, chunks, dim)
        return m.cat([p.unsqueeze(0).squeeze(0) * (i + 1) for i, p in enumerate(pieces)], dim)

    _check(data, dtype, [array], lambda x: run(numdiff, x), lambda x: run(torch, x))


@given(data=st.data())
def test_gather_and_scatter_add_with_random_indices_match_torch(data):
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(min_dims=1), label="shape")
    dim = data.draw(st.integers(0, len(shape) - 1), label="dim")
    index_shape = tuple(
        data.draw(st.integers(1, n + 1 if d == dim else n), label="index side") for d, n in enumerate(shape)
    )
    index = data.draw(
        hnp.arrays(np.int64, index_shape, elements=st.integers(0, shape[dim] - 1)), label="index"
    )
    array = data.draw(values(dtype, shape), label="x")
    src = data.draw(values(dtype, index_shape), label="src")
    _check(
        data,
        dtype,
        [array],
        lambda x: x.gather(dim, numdiff.tensor(index)),
        lambda x: x.gather(dim, torch.tensor(index)),
    )
    _check(
        data,
        dtype,
        [array, src],
        lambda x, s: x.scatter_add(dim, numdiff.tensor(index), s),
        lambda x, s: x.scatter_add(dim, torch.tensor(index), s),
    )


@given(data=st.data())
def test_index_select_and_masked_fill_match_torch(data):
    dtype = data.draw(DTYPES, label="dtype")
    shape = data.draw(shapes(min_dims=1), label="shape")
    dim = data.draw(st.integers(0, len(shape) - 1), label="dim")
    index = data.draw(
        hnp.arrays(np.int64, st.integers(1, 4), elements=st.integers(0, shape[dim] - 1)), label="index"
    )
    mask = data.draw(hnp.arrays(np.bool_, shape), label="mask")
    array = data.draw(values(dtype, shape), label="x")
    _check(
        data,
        dtype,
        [array],
        lambda x: (
            x.index_select(dim, numdiff.tensor(index)).sum(dim)
            + x.masked_fill(numdiff.tensor(mask), 0.5).sum(dim)
        ),
        lambda x: (
            x.index_select(dim, torch.tensor(index)).sum(dim)
            + x.masked_fill(torch.tensor(mask), 0.5).sum(dim)
        ),
    )


def test_integer_indexing_one_element_returns_a_view_as_pytorch():
    # NumPy answers y[0] with a scalar copy; numdiff returns a 0-d view, so in-place edits reach y.
    y = numdiff.tensor([1.0, 2.0, 3.0])
    y[0].mul_(3.0)
    m = numdiff.tensor(np.arange(6.0).reshape(2, 3))
    m[1, 2].zero_()
    ty = torch.tensor([1.0, 2.0, 3.0])
    ty[0].mul_(3.0)
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    assert m.numpy()[1, 2] == 0.0 and m.numpy()[0, 0] == 0.0 and m.numpy()[1, 1] == 4.0
    # While recording, an in-place edit of that view reaches the base's gradient, as in PyTorch.
    x, tx = numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True), torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for lib, start in ((numdiff, x), (torch, tx)):
        h = start * 2.0
        h[0].mul_(3.0)
        (h * lib.tensor([1.0, 10.0, 100.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("repeats", [(1, 1), (3, 1), (1, 1, 1), (2, 1, 1)])
def test_repeat_and_tile_return_new_memory_that_inplace_ops_may_write(repeats):
    # With no real repetition repeat returned a view: writing into it changed the input (1, 1), or
    # raised NumPy's "assignment destination is read-only" (a stride-0 view, for (3, 1)).
    for make in (lambda x: x.repeat(*repeats), lambda x: numdiff.tile(x, repeats)):
        x = numdiff.tensor([[1.0, 2.0]])
        out = make(x)
        out.add_(10.0)
        out[(0,) * out.ndim] = -1.0
        assert x.tolist() == [[1.0, 2.0]]
        expected = torch.tensor([[1.0, 2.0]]).repeat(*repeats) + 10.0
        expected[(0,) * out.ndim] = -1.0
        np.testing.assert_array_equal(out.numpy(), expected.numpy())
    leaf = numdiff.tensor([[1.0, 2.0]], dtype=numdiff.float64, requires_grad=True)
    out = leaf.repeat(*repeats) * 1
    out.sum().backward()
    assert leaf.grad.tolist() == [[float(np.prod(repeats))] * 2]


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda x: x.repeat_interleave(1, dim=1), lambda t: t.repeat_interleave(1, dim=1)),
        (lambda x: x.repeat_interleave(3, dim=0), lambda t: t.repeat_interleave(3, dim=0)),
        (lambda x: numdiff.repeat_interleave(x, 1), lambda t: torch.repeat_interleave(t, 1)),
        (lambda x: x.repeat(0, 1), lambda t: t.repeat(0, 1)),
        (lambda x: numdiff.tile(x, (0,)), lambda t: torch.tile(t, (0,))),
    ],
)
def test_repeat_interleave_and_empty_repeats_return_writable_new_memory(make, expected):
    # repeat_interleave by an int is expand + reshape too: a view of the input (written through by
    # in-place ops) or a read-only stride-0 one; an empty repeat was a read-only broadcast.
    x = numdiff.tensor([[1.0, 2.0]])
    out = make(x)
    out.add_(10.0)
    assert x.tolist() == [[1.0, 2.0]]
    np.testing.assert_array_equal(out.numpy(), (expected(torch.tensor([[1.0, 2.0]])) + 10.0).numpy())


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.gather(x, 0, m.tensor(0)),
        lambda m, x: m.gather(x, -1, m.tensor(0)),
        lambda m, x: m.scatter_add(x, 0, m.tensor(0), x * 2),
        lambda m, x: m.scatter(x, 0, m.tensor(0), x * 3),
        lambda m, x: m.scatter(x, 0, m.tensor(0), 4.0),
    ],
)
def test_gather_and_scatter_of_a_zero_dim_tensor_by_a_zero_dim_index_match_torch(call):
    # Their checks indexed the input's shape by dim: IndexError "tuple index out of range".
    ours_in = numdiff.tensor(1.5, dtype=numdiff.float64, requires_grad=True)
    theirs_in = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    ours, theirs = call(numdiff, ours_in), call(torch, theirs_in)
    assert ours.shape == () and ours.item() == theirs.item()
    ours.backward()
    theirs.backward()
    assert ours_in.grad.item() == theirs_in.grad.item()
    with pytest.raises(IndexError, match=r"gather: index values must be in \[0, 1\)"):
        numdiff.gather(numdiff.tensor(1.5), 0, numdiff.tensor(1))



@pytest.mark.parametrize(
    "call",
    [
        lambda m, x, s: m.zeros(5, dtype=x.dtype).scatter_(0, m.tensor(3), value=1) * x,
        lambda m, x, s: x.scatter(0, m.tensor(1), s),
        lambda m, x, s: x.gather(0, m.tensor(2)) * s,
        lambda m, x, s: x.scatter_add(0, m.tensor(4), s),
        lambda m, x, s: x.scatter_reduce(0, m.tensor(4), s, "amax"),
        lambda m, x, s: x.scatter_reduce(0, m.tensor(0), s, "prod", include_self=False),
        lambda m, x, s: s.gather(0, m.tensor([0, 0])) * x[:2],
        lambda m, x, s: s.scatter(0, m.tensor([0]), x[3:4]) * x,
    ],
)
def test_a_zero_dim_index_beside_a_one_dim_tensor_reads_as_one_element_as_in_torch(call):
    # The data tutorial's one-hot transform, zeros(10).scatter_(0, tensor(y), value=1), raised
    # "index has 0 dims but input has 1": torch reads a 0-d index or input as one element here.
    x = np.array([0.5, -1.5, 2.0, 3.0, -0.25])
    ours_in = [numdiff.tensor(x, requires_grad=True), numdiff.tensor(7.0, dtype=numdiff.float64, requires_grad=True)]
    theirs_in = [torch.tensor(x, requires_grad=True), torch.tensor(7.0, dtype=torch.float64, requires_grad=True)]
    ours, theirs = call(numdiff, *ours_in), call(torch, *theirs_in)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    weights = np.arange(1.0, 1.0 + theirs.numel()).reshape(tuple(theirs.shape))
    (ours * numdiff.tensor(weights)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    for a, b in zip(ours_in, theirs_in):
        assert (a.grad is None) == (b.grad is None)
        if b.grad is not None:
            np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
    with pytest.raises(IndexError, match=r"scatter: index values must be in \[0, 5\)"):
        numdiff.zeros(5).scatter_(0, numdiff.tensor(5), value=1)
    with pytest.raises(ValueError, match="gather: index has 0 dims"):
        numdiff.zeros(2, 3).gather(0, numdiff.tensor(1))


def test_cat_of_a_zero_dim_tensor_says_so():
    with pytest.raises(ValueError, match=r"cat: tensor 1 is zero-dimensional and cannot be concatenated; stack\(\)"):
        numdiff.cat([numdiff.ones(2), numdiff.tensor(1.0)])
    with pytest.raises(ValueError, match="cat: tensor 0 is zero-dimensional"):
        numdiff.cat([numdiff.tensor(1.0), numdiff.tensor(2.0)])
