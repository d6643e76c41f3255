"""Transposing copies split over the threads (numdiff.kernels.layout_copy): bit for bit NumPy's copy
at one and two threads, for every layout the split takes and every one it leaves to NumPy, and
through the ops that copy (contiguous, clone, reshape) with their gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
from numdiff.kernels import _layout_copy_rows, layout_copy

# (shape, permutation, slicing of the permuted view)
TRANSPOSED = [
    ((300, 260), (1, 0), ()),  # a plain transpose
    ((5, 130, 129), (0, 2, 1), ()),  # planes whose sides are not multiples of the tile
    ((3, 40, 33, 17), (0, 2, 3, 1), ()),  # NCHW to NHWC
    ((2, 9, 70, 75), (3, 1, 0, 2), ()),
    ((3, 200, 250), (2, 1, 0), (slice(None), slice(1, None, 2))),  # every other row as well
    ((2, 3, 4, 50, 300), (4, 3, 2, 1, 0), ()),  # five dimensions that do not coalesce: NumPy's copy
    ((260, 300), (1, 0), (slice(None, None, -1),)),  # a negative stride: NumPy's copy
]


def _view(case, dtype):
    shape, permutation, key = case
    x = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    return x.transpose(permutation)[key]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", TRANSPOSED, ids=lambda case: f"{case[0]}-{case[1]}")
def test_copies_equal_numpys_at_one_and_two_threads(case, dtype, two_threads):
    view = _view(case, dtype)
    expected = view.copy()
    for threads in (2, 1):
        numdiff.set_num_threads(threads)
        out = layout_copy.contiguous_copy(view)
        assert out.flags.c_contiguous and out.shape == view.shape and out.dtype == view.dtype
        assert out.tobytes() == expected.tobytes()
        assert not np.shares_memory(out, view)


def test_the_split_route_runs_the_kernel_for_a_large_transposing_copy(two_threads, monkeypatch):
    calls = []
    kernel = _layout_copy_rows.copy_rows

    def recording(*args):
        calls.append(args[1:3])
        return kernel(*args)

    monkeypatch.setattr(_layout_copy_rows, "copy_rows", recording)
    view = _view(((4, 130, 150), (0, 2, 1), ()), np.float32)
    assert layout_copy.contiguous_copy(view).tobytes() == view.copy().tobytes()
    assert calls == [((1, 4, 150, 130), (0, 19500, 1, 150))]
    layout_copy.contiguous_copy(np.ascontiguousarray(view)[:, :, ::1])  # contiguous rows: NumPy's copy
    layout_copy.contiguous_copy(_view(((64, 64, 64), (0, 2, 1), ()), np.float32))  # 64x64 planes: NumPy's
    layout_copy.contiguous_copy(_view(((130, 150), (1, 0), ()), np.int64))  # not a float dtype: NumPy's
    assert len(calls) == 1


@pytest.mark.parametrize("parts", [2, 3, 5])
@pytest.mark.parametrize("shape, strides", [((1, 3, 37, 29), (0, 29 * 37, 1, 37)), ((2, 5, 21, 18), (1, 2 * 18 * 21, 2 * 18, 2))])
def test_the_kernel_covers_every_element_on_any_split(shape, strides, parts):
    """Runs of rows that start and end inside planes and tiles, whatever the number of parts."""
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    flat = np.random.default_rng(5).standard_normal(span)
    expected = np.lib.stride_tricks.as_strided(flat, shape, tuple(s * 8 for s in strides)).copy()
    out = np.full(expected.size, np.nan)
    _layout_copy_rows.copy_rows(flat, shape, strides, out, parts)
    assert out.tobytes() == expected.tobytes()


def test_coalescing_merges_neighbours_and_refuses_what_the_kernel_cannot_read():
    x = np.zeros((2, 3, 4, 5), np.float32)
    assert layout_copy._coalesced(x.transpose(0, 1, 3, 2)) == ((1, 6, 5, 4), (0, 20, 1, 5), 120)
    assert layout_copy._coalesced(x[:, :, :, ::2].transpose(0, 1, 3, 2)) == ((1, 6, 3, 4), (0, 20, 2, 5), 120)
    assert layout_copy._coalesced(np.broadcast_to(x[:1], (7, 3, 4, 5)).transpose(1, 0, 2, 3)) == (
        (1, 3, 7, 20), (0, 20, 0, 1), 60)  # fmt: skip
    assert layout_copy._coalesced(x[::-1]) is None
    assert layout_copy._coalesced(np.zeros((2, 3, 4, 5, 6)).transpose(4, 3, 2, 1, 0)) is None


def test_reshape_keeps_views_where_numpy_gives_them(two_threads):
    x = np.random.default_rng(1).standard_normal((8, 130, 140)).astype(np.float32)
    sliced = x[:, :, :70]  # rows of 70 elements, 140 apart: merging its first two axes is a view
    view = layout_copy.reshaped(sliced, (8 * 130, 70))
    assert np.shares_memory(view, x) and view.tobytes() == sliced.reshape(8 * 130, 70).tobytes()
    transposed = x.transpose(0, 2, 1)
    copied = layout_copy.reshaped(transposed, (8, -1))
    assert not np.shares_memory(copied, x) and copied.tobytes() == transposed.reshape(8, -1).tobytes()
    with pytest.raises(ValueError, match="cannot reshape array of size 145600 into shape"):
        layout_copy.reshaped(transposed, (11, -1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ops_that_copy_match_torch_with_their_gradients(dtype, two_threads):
    rng = np.random.default_rng(2)
    data = rng.standard_normal((4, 96, 180)).astype(dtype)
    weight = rng.standard_normal((4, 180, 96)).astype(dtype)
    x, xt = numdiff.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    ours = [x.permute(0, 2, 1).contiguous(), x.transpose(1, 2).reshape(4, -1), x.mT.clone()]
    theirs = [xt.permute(0, 2, 1).contiguous(), xt.transpose(1, 2).reshape(4, -1), xt.mT.clone()]
    for out, expected in zip(ours, theirs):
        assert out.is_contiguous()
        np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    loss = sum((out.reshape(weight.shape) * numdiff.tensor(weight)).sum() for out in ours)
    loss.backward()
    sum((out.reshape(weight.shape) * torch.tensor(weight)).sum() for out in theirs).backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6 if dtype == np.float32 else 1e-12)


def test_contiguous_returns_contiguous_arrays_themselves(two_threads):
    x = np.random.default_rng(4).standard_normal((3, 140, 160)).astype(np.float32)
    assert layout_copy.contiguous(x) is x
    transposed = x.transpose(0, 2, 1)
    copied = layout_copy.contiguous(transposed)
    assert copied.flags.c_contiguous and copied.tobytes() == np.ascontiguousarray(transposed).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv1d_of_a_permuted_embedding_matches_torch(dtype, two_threads):
    """A text CNN's input: (batch, tokens, embedding) permuted to channels first, copied by conv's
    operand preparation on the split route."""
    rng = np.random.default_rng(6)
    data = rng.standard_normal((4, 180, 100)).astype(dtype)
    weight = rng.standard_normal((8, 100, 3)).astype(dtype)
    x, xt = numdiff.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    w, wt = numdiff.tensor(weight, requires_grad=True), torch.tensor(weight, requires_grad=True)
    out = numdiff.nn.functional.conv1d(x.permute(0, 2, 1), w, padding=1)
    expected = torch.nn.functional.conv1d(xt.permute(0, 2, 1), wt, padding=1)
    tolerance = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=tolerance, atol=tolerance)
    out.square().sum().backward()
    expected.square().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=tolerance, atol=tolerance * 10)
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=tolerance, atol=tolerance * 100)
