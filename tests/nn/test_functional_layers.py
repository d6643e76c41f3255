"""dropout, batch_norm, layer_norm, embedding, pad and one_hot: against PyTorch, gradchecks, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import numdiff
import numdiff.nn.functional as nnf
from numdiff.autograd import gradcheck
from tests.nn.helpers import assert_close, twins

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _forward_backward(ours_fn, theirs_fn, arrays, rng, rtol=1e-7, atol=1e-10):
    pairs = [twins(a) for a in arrays]
    out = ours_fn(*(p[0] for p in pairs))
    expected = theirs_fn(*(p[1] for p in pairs))
    assert_close(out, expected, rtol, atol, "forward")
    seed = rng.standard_normal(tuple(out.shape))
    out.backward(numdiff.tensor(seed))
    expected.backward(torch.tensor(seed))
    for i, (mine, theirs) in enumerate(pairs):
        if mine.requires_grad:
            assert_close(mine.grad, theirs.grad, rtol, atol, f"gradient of argument {i}")


# ----------------------------------------------------------------------------- dropout
def test_dropout_zeroes_about_p_and_scales_the_rest():
    numdiff.manual_seed(0)
    x = numdiff.ones(4000, requires_grad=True)
    out = nnf.dropout(x, p=0.3)
    values = out.detach().numpy()
    kept = values[values != 0]
    np.testing.assert_allclose(kept, 1 / 0.7, rtol=1e-6)
    assert abs((values == 0).mean() - 0.3) < 0.03
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), values)  # gradient is the same mask, scaled


def test_dropout_is_reproducible_under_manual_seed():
    x = numdiff.ones(50)
    numdiff.manual_seed(7)
    first = nnf.dropout(x, 0.5).numpy().copy()
    numdiff.manual_seed(7)
    np.testing.assert_array_equal(nnf.dropout(x, 0.5).numpy(), first)


def test_dropout_not_training_returns_the_input_itself():
    x = numdiff.randn(3)
    assert nnf.dropout(x, 0.5, training=False) is x


def test_dropout_with_p_one_zeroes_everything_and_keeps_the_graph():
    x = numdiff.randn(3, requires_grad=True)
    out = nnf.dropout(x, 1.0)
    assert out.tolist() == [0.0, 0.0, 0.0]
    out.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_dropout_inplace_writes_into_the_input():
    numdiff.manual_seed(1)
    x = numdiff.ones(100)
    out = nnf.dropout(x, 0.5, inplace=True)
    assert out is x
    assert (x.numpy() == 0).any() and (x.numpy() == 2).any()


@pytest.mark.parametrize("p", [-0.1, 1.1])
def test_dropout_probability_out_of_range_is_refused(p):
    with pytest.raises(ValueError, match=f"between 0 and 1, but got {p}"):
        nnf.dropout(numdiff.ones(2), p)


# ----------------------------------------------------------------------------- batch_norm
@pytest.mark.parametrize("shape", [(4, 3), (3, 2, 5), (2, 3, 2, 2)])
@pytest.mark.parametrize("affine", [False, True])
def test_batch_norm_training_matches_torch_and_updates_running_stats(rng, shape, affine):
    channels = shape[1]
    weight = rng.uniform(0.5, 2.0, channels) if affine else None
    bias = rng.standard_normal(channels) if affine else None
    ours_stats = [numdiff.zeros(channels, dtype=numdiff.float64), numdiff.ones(channels, dtype=numdiff.float64)]
    theirs_stats = [torch.zeros(channels, dtype=torch.float64), torch.ones(channels, dtype=torch.float64)]

    def ours(x):
        w = None if weight is None else numdiff.tensor(weight)
        b = None if bias is None else numdiff.tensor(bias)
        return nnf.batch_norm(x, *ours_stats, w, b, training=True, momentum=0.2)

    def theirs(x):
        w = None if weight is None else torch.tensor(weight)
        b = None if bias is None else torch.tensor(bias)
        return TF.batch_norm(x, *theirs_stats, w, b, training=True, momentum=0.2)

    _forward_backward(ours, theirs, (rng.standard_normal(shape) * 2 + 1,), rng)
    assert_close(ours_stats[0], theirs_stats[0], what="running_mean")
    assert_close(ours_stats[1], theirs_stats[1], what="running_var (unbiased)")


def test_batch_norm_eval_uses_running_stats_and_passes_gradcheck(rng):
    mean = numdiff.tensor(rng.standard_normal(3))
    var = numdiff.tensor(rng.uniform(0.5, 2.0, 3))
    x = rng.standard_normal((2, 3, 2))
    _forward_backward(
        lambda t: nnf.batch_norm(t, mean, var, training=False),
        lambda t: TF.batch_norm(t, torch.tensor(mean.numpy()), torch.tensor(var.numpy()), training=False),
        (x,),
        rng,
    )
    weight = numdiff.tensor(rng.uniform(0.5, 2.0, 3), requires_grad=True)
    bias = numdiff.tensor(rng.standard_normal(3), requires_grad=True)
    inputs = (numdiff.tensor(x, requires_grad=True), weight, bias)
    assert gradcheck(lambda t, w, b: nnf.batch_norm(t, None, None, w, b, training=True), inputs)


def test_batch_norm_training_needs_more_than_one_value_per_channel():
    with pytest.raises(ValueError, match=r"more than 1 value per channel.*\(1, 3\)"):
        nnf.batch_norm(numdiff.ones(1, 3), None, None, training=True)


def test_batch_norm_running_stats_of_wrong_size_are_refused():
    with pytest.raises(ValueError, match=r"running_mean must have shape \(3,\).*got \(4,\)"):
        nnf.batch_norm(numdiff.ones(2, 3), numdiff.zeros(4), numdiff.ones(4))


# ----------------------------------------------------------------------------- layer_norm
@pytest.mark.parametrize("normalized_shape", [(4,), (3, 4)])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_matches_torch(rng, normalized_shape, affine):
    weight = rng.uniform(0.5, 2.0, normalized_shape) if affine else None
    bias = rng.standard_normal(normalized_shape) if affine else None
    arrays = (rng.standard_normal((2,) + normalized_shape),) + ((weight, bias) if affine else ())

    def ours(x, *wb):
        return nnf.layer_norm(x, normalized_shape, *wb, eps=1e-5)

    def theirs(x, *wb):
        return TF.layer_norm(x, normalized_shape, *wb, eps=1e-5)

    _forward_backward(ours, theirs, arrays, rng)


def test_layer_norm_passes_gradcheck(rng):
    inputs = tuple(numdiff.tensor(a, requires_grad=True) for a in (rng.standard_normal((2, 3)), rng.standard_normal(3), rng.standard_normal(3)))
    assert gradcheck(lambda x, w, b: nnf.layer_norm(x, 3, w, b), inputs)


def test_layer_norm_wrong_trailing_shape_names_the_expected_one():
    with pytest.raises(ValueError, match=r"normalized_shape=\[3\], expected input with shape \(\*, 3\).*\(2, 4\)"):
        nnf.layer_norm(numdiff.ones(2, 4), (3,))


# ----------------------------------------------------------------------------- embedding
@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_matches_torch_including_padding_gradient(rng, padding_idx):
    indices = np.array([[0, 1, 3], [1, 1, 2]])
    table = rng.standard_normal((4, 3))

    _forward_backward(
        lambda w: nnf.embedding(numdiff.tensor(indices), w, padding_idx=padding_idx),
        lambda w: TF.embedding(torch.tensor(indices), w, padding_idx=padding_idx),
        (table,),
        rng,
    )


def test_embedding_padding_row_gets_exactly_zero_gradient(rng):
    weight = numdiff.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    nnf.embedding(numdiff.tensor([0, 2, 2]), weight, padding_idx=2).sum().backward()
    assert weight.grad.tolist() == [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]


def test_embedding_scale_grad_by_freq_matches_torch(rng):
    indices = np.array([0, 2, 2, 2, 1, 0])
    _forward_backward(
        lambda w: nnf.embedding(numdiff.tensor(indices), w, scale_grad_by_freq=True),
        lambda w: TF.embedding(torch.tensor(indices), w, scale_grad_by_freq=True),
        (rng.standard_normal((4, 2)),),
        rng,
    )


def test_embedding_max_norm_renormalises_looked_up_rows_in_place_like_torch(rng):
    table = rng.standard_normal((4, 3)) * 3
    ours = numdiff.tensor(table)
    theirs = torch.tensor(table)
    indices = np.array([0, 2])
    out = nnf.embedding(numdiff.tensor(indices), ours, max_norm=1.0)
    expected = TF.embedding(torch.tensor(indices), theirs, max_norm=1.0)
    assert_close(out, expected)
    assert_close(ours, theirs, what="renormalised table")
    assert np.allclose(ours.numpy()[[1, 3]], table[[1, 3]])  # rows not looked up are untouched


@pytest.mark.parametrize("indices", [np.array(2), np.array([3, 0, 3], np.int32), np.array([[[1, 0], [2, 2]]])], ids=["0-d", "int32", "3-d"])
def test_embedding_of_any_index_shape_and_dtype_matches_torch_and_gradchecks(rng, indices):
    # Checked indices take the gather op directly (not weight[input]): every index layout must
    # still give torch's rows and gradients (repeated rows summed).
    table = rng.standard_normal((4, 3))
    _forward_backward(
        lambda w: nnf.embedding(numdiff.tensor(indices), w),
        lambda w: TF.embedding(torch.tensor(indices.astype(np.int64)), w),
        (table,),
        rng,
    )
    weight = numdiff.tensor(table, requires_grad=True)
    assert gradcheck(lambda w: nnf.embedding(numdiff.tensor(indices), w), (weight,))


def test_embedding_negative_index_is_refused_before_the_lookup():
    with pytest.raises(IndexError, match=r"indices must be in \[0, 3\].*got values in \[-1, 2\]"):
        nnf.embedding(numdiff.tensor([2, -1]), numdiff.ones(4, 2))


def test_embedding_index_out_of_range_names_the_table_size():
    with pytest.raises(IndexError, match=r"indices must be in \[0, 3\].*got values in \[0, 4\]"):
        nnf.embedding(numdiff.tensor([0, 4]), numdiff.ones(4, 2))


def test_embedding_float_indices_are_refused():
    with pytest.raises(TypeError, match="integer tensor of indices"):
        nnf.embedding(numdiff.tensor([0.0]), numdiff.ones(4, 2))


# ----------------------------------------------------------------------------- pad
PAD_CASES = [
    ("constant", (1, 2)),
    ("constant", (1, 0, 2, 1)),
    ("constant", (-1, 1, 0, -1)),
    ("reflect", (2, 1)),
    ("reflect", (1, 2, 2, 0)),
    ("replicate", (3, 1, 0, 2)),
    ("circular", (1, 2, 2, 1)),
]


@pytest.mark.parametrize("mode, amounts", PAD_CASES, ids=[f"{m}-{a}" for m, a in PAD_CASES])
def test_pad_matches_torch(rng, mode, amounts):
    x = rng.standard_normal((2, 3, 4))
    value = 0.5 if mode == "constant" else None
    _forward_backward(
        lambda t: nnf.pad(t, amounts, mode=mode, value=value),
        lambda t: TF.pad(t, amounts, mode=mode, value=value),
        (x,),
        rng,
    )


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_passes_gradcheck(rng, mode):
    x = numdiff.tensor(rng.standard_normal((1, 3, 3)), requires_grad=True)
    assert gradcheck(lambda t: nnf.pad(t, (2, 1, 1, 2), mode=mode), (x,))


def test_pad_reflect_wider_than_the_input_is_refused():
    with pytest.raises(ValueError, match=r"reflect padding \(3, 0\) must be less than the size 3 of dimension 1"):
        nnf.pad(numdiff.ones(1, 3), (3, 0), mode="reflect")


def test_pad_odd_length_is_refused():
    with pytest.raises(ValueError, match="divisible by 2"):
        nnf.pad(numdiff.ones(2, 2), (1, 1, 1))


def test_pad_too_many_dims_is_refused():
    with pytest.raises(ValueError, match=r"pads 2 dims but the input has only 1"):
        nnf.pad(numdiff.ones(3), (1, 1, 1, 1))


# ----------------------------------------------------------------------------- one_hot
def test_one_hot_matches_torch():
    labels = np.array([[0, 3], [2, 1]])
    assert_close(nnf.one_hot(numdiff.tensor(labels), 5), TF.one_hot(torch.tensor(labels), 5))
    assert_close(nnf.one_hot(numdiff.tensor(labels)), TF.one_hot(torch.tensor(labels)))
    assert nnf.one_hot(numdiff.tensor(labels)).dtype is numdiff.int64


def test_one_hot_class_too_large_is_refused():
    with pytest.raises(ValueError, match="smaller than num_classes=3, got 3"):
        nnf.one_hot(numdiff.tensor([0, 3]), 3)


def test_one_hot_negative_class_is_refused():
    with pytest.raises(ValueError, match="non-negative"):
        nnf.one_hot(numdiff.tensor([-1, 0]), 3)


@given(
    shape=st.lists(st.integers(2, 4), min_size=2, max_size=3),
    amounts=st.lists(st.integers(0, 1), min_size=2, max_size=4),
    mode=st.sampled_from(["constant", "reflect", "replicate", "circular"]),
    seed=st.integers(0, 2**16),
)
def test_pad_matches_torch_on_drawn_shapes(shape, amounts, mode, seed):
    amounts = amounts[: 2 * (len(amounts) // 2)]
    if mode != "constant":
        amounts = amounts[: 2 * (len(shape) - 1)]  # torch pads all but the first dim in these modes
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    _forward_backward(lambda t: nnf.pad(t, amounts, mode=mode), lambda t: TF.pad(t, amounts, mode=mode), (x,), rng)
