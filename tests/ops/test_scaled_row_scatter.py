"""scaled_row_scatter (the op under embedding_bag's sum and mean): its checks, its kernel's checks,
vmap's rule, compile's replay of the bags, and embedding_bag in float32 against PyTorch.
(Gradient checks against central differences: tests/ops/cases_layers.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf
from numdiff.kernels import scatter as scatter_kernels
from numdiff.ops.scatter import scaled_row_scatter

torch = pytest.importorskip("torch")

TAKE, INTO = np.array([1, 3, 0, 3, 2, 4]), np.array([0, 0, 2, 2, 1, 2])


def _reference(src: np.ndarray, scale: np.ndarray, take: np.ndarray, into: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros((size, src.shape[1]), dtype=src.dtype)
    np.add.at(out, into, scale[:, None] * src[take])
    return out


def test_bad_indices_and_shapes_name_the_op_and_the_values():
    src, scale = numdiff.randn(5, 3), numdiff.ones(6)
    take, into = numdiff.tensor(TAKE), numdiff.tensor(INTO)
    with pytest.raises(IndexError, match=r"scaled_row_scatter: take values must be in \[0, 4\), got values in \[0, 4\]"):
        scaled_row_scatter(src[:4], scale, take, into, 3)
    with pytest.raises(IndexError, match=r"scaled_row_scatter: into values must be in \[0, 2\), got values in \[0, 2\]"):
        scaled_row_scatter(src, scale, take, into, 2)
    with pytest.raises(ValueError, match=r"take, into and scale must have one length, got take \(6,\) and scale \(5,\)"):
        scaled_row_scatter(src, scale[:5], take, into, 3)
    with pytest.raises(TypeError, match=r"scaled_row_scatter: scale is numdiff.float64 but src is numdiff.float32"):
        scaled_row_scatter(src, scale.double(), take, into, 3)
    with pytest.raises(TypeError, match=r"scaled_row_scatter: into must be a 1-D integer tensor"):
        scaled_row_scatter(src, scale, take, into.float(), 3)
    with pytest.raises(ValueError, match=r"scaled_row_scatter: src must be a 2-D floating tensor, got shape \(15,\)"):
        scaled_row_scatter(src.reshape(-1), scale, take, into, 3)


def test_kernel_refuses_out_of_range_rows_before_it_runs():
    out, src = np.zeros((3, 2)), np.ones((5, 2))
    with pytest.raises(IndexError, match=r"scaled_row_scatter: take must lie in \[0, 4\], got values in \[0, 7\]"):
        scatter_kernels.scaled_row_scatter(out, src, np.ones(2), np.array([0, 7]), np.array([0, 1]))
    with pytest.raises(IndexError, match=r"scaled_row_scatter: into must lie in \[0, 2\], got values in \[-1, 1\]"):
        scatter_kernels.scaled_row_scatter(out, src, np.ones(2), np.array([0, 1]), np.array([-1, 1]))
    with pytest.raises(ValueError, match=r"one width"):
        scatter_kernels.scaled_row_scatter(out, np.ones((5, 3)), np.ones(2), np.array([0, 1]), np.array([0, 1]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_matches_numpy_with_repeats_and_strided_source(dtype):
    rng = np.random.default_rng(3)
    src = rng.standard_normal((3, 5)).astype(dtype).T  # a transposed view: not C-contiguous
    scale = rng.standard_normal(6).astype(dtype)
    out = scaled_row_scatter(numdiff.tensor(src), numdiff.tensor(scale), numdiff.tensor(TAKE), numdiff.tensor(INTO), 4)
    np.testing.assert_allclose(out.numpy(), _reference(src, scale, TAKE, INTO, 4), rtol=1e-6 if dtype == np.float32 else 1e-15)
    assert not out.numpy()[3].any()  # a row no entry reaches stays zero


@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)])
def test_vmap_matches_a_loop_over_the_batch(in_dims):
    rng = np.random.default_rng(4)
    src = numdiff.tensor(rng.standard_normal((3, 5, 4)) if in_dims[0] == 0 else rng.standard_normal((5, 4)))
    scale = numdiff.tensor(rng.standard_normal((3, 6)) if in_dims[1] == 0 else rng.standard_normal(6))
    take, into = numdiff.tensor(TAKE), numdiff.tensor(INTO)

    def f(s, c):
        return scaled_row_scatter(s, c, take, into, 3)

    out = numdiff.func.vmap(f, in_dims=in_dims)(src, scale)
    expected = [f(src[b] if in_dims[0] == 0 else src, scale[b] if in_dims[1] == 0 else scale).numpy() for b in range(3)]
    np.testing.assert_allclose(out.numpy(), np.stack(expected), rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_compiled_embedding_bag_replays_new_bags(mode):
    numdiff.manual_seed(0)
    bag = numdiff.nn.EmbeddingBag(10, 3, mode=mode, padding_idx=4, dtype=numdiff.float64)
    compiled = numdiff.compile(lambda i, o: (bag(i, o) ** 2).sum())
    rng = np.random.default_rng(5)
    for offsets in ([0, 3, 3, 6], [0, 1, 7, 7], [0, 0, 2, 8]):  # same shapes, different bags
        i, o = numdiff.tensor(rng.integers(0, 10, 8)), numdiff.tensor(offsets)
        bag.zero_grad()
        loss = compiled(i, o)
        loss.backward()
        grad = bag.weight.grad.numpy().copy()
        bag.zero_grad()
        eager = (bag(i, o) ** 2).sum()
        eager.backward()
        np.testing.assert_allclose(float(loss), float(eager), rtol=1e-14)
        np.testing.assert_allclose(grad, bag.weight.grad.numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_float32_embedding_bag_and_its_gradients_match_torch(mode):
    rng = np.random.default_rng(6)
    weight = rng.standard_normal((50, 8)).astype(np.float32)
    indices = rng.integers(0, 50, 40)
    offsets = np.array([0, 5, 5, 17, 30])
    psw = rng.standard_normal(40).astype(np.float32) if mode == "sum" else None
    grad = rng.standard_normal((5, 8)).astype(np.float32)
    ours = [numdiff.tensor(weight, requires_grad=True)] + ([numdiff.tensor(psw, requires_grad=True)] if psw is not None else [])
    theirs = [torch.tensor(weight, requires_grad=True)] + ([torch.tensor(psw, requires_grad=True)] if psw is not None else [])
    out = nf.embedding_bag(numdiff.tensor(indices), ours[0], numdiff.tensor(offsets), mode=mode, padding_idx=7,
                           per_sample_weights=ours[1] if psw is not None else None)
    expected = torch.nn.functional.embedding_bag(torch.tensor(indices), theirs[0], torch.tensor(offsets), mode=mode,
                                                 padding_idx=7, per_sample_weights=theirs[1] if psw is not None else None)
    out.backward(numdiff.tensor(grad))
    expected.backward(torch.tensor(grad))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_embedding_bag_refuses_an_index_outside_the_table():
    with pytest.raises(IndexError, match=r"embedding_bag: indices must be in \[0, 9\] .* got values in \[0, 10\]"):
        nf.embedding_bag(numdiff.tensor([0, 10]), numdiff.randn(10, 3), numdiff.tensor([0]), mode="sum")
