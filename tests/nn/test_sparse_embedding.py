"""Sparse gradients of embeddings (``sparse=True``) against torch: the COO gradient's indices and
values entry for entry, its dense form against central differences in float64, embedding_bag's
sum and mean, how gradients of one weight add up (sparse + sparse, dense + sparse, sparse +
dense), zero_grad, clip_grad_norm_, and the inputs refused before any kernel runs."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
TABLE = RNG.standard_normal((7, 4))
IDS = np.array([[1, 3, 3], [0, 6, 1]])


def _sparse_grad(lib, ids, dtype="float64", **options):
    weight = lib.tensor(TABLE.astype(dtype), requires_grad=True)
    push = lib.tensor(np.linspace(-1, 1, ids.size * 4).reshape(*ids.shape, 4).astype(dtype))
    out = lib.nn.functional.embedding(lib.tensor(ids), weight, sparse=True, **options)
    (out * push).sum().backward()
    return out, weight.grad


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("options", [{}, {"padding_idx": 3}, {"padding_idx": -1}], ids=["plain", "padding", "negative-padding"])
def test_embedding_sparse_gradient_matches_pytorch_entry_for_entry(options, dtype):
    (ours, our_grad), (theirs, their_grad) = _sparse_grad(numdiff, IDS, dtype, **options), _sparse_grad(torch, IDS, dtype, **options)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    assert our_grad.is_sparse and their_grad.is_sparse
    assert not our_grad.is_coalesced() and tuple(our_grad.shape) == tuple(their_grad.shape)
    np.testing.assert_array_equal(our_grad._indices().numpy(), their_grad._indices().numpy())
    np.testing.assert_allclose(our_grad._values().numpy(), their_grad._values().numpy(), rtol=1e-6)
    coalesced = our_grad.coalesce()
    np.testing.assert_array_equal(coalesced.indices().numpy(), their_grad.coalesce().indices().numpy())
    np.testing.assert_allclose(our_grad.to_dense().numpy(), their_grad.to_dense().numpy(), rtol=1e-6, atol=1e-7)


def test_embedding_sparse_gradient_is_the_central_difference_in_float64():
    ids = numdiff.tensor(IDS)
    push = numdiff.tensor(RNG.standard_normal((2, 3, 4)))

    def loss(table):
        return float((nf.embedding(ids, numdiff.tensor(table), padding_idx=6).pow(2) * push).sum().item())

    weight = numdiff.tensor(TABLE.copy(), requires_grad=True)
    (nf.embedding(ids, weight, padding_idx=6, sparse=True).pow(2) * push).sum().backward()
    numeric = np.zeros_like(TABLE)
    for index in np.ndindex(TABLE.shape):
        step = np.zeros_like(TABLE)
        step[index] = 1e-6
        numeric[index] = (loss(TABLE + step) - loss(TABLE - step)) / 2e-6
    numeric[6] = 0.0  # padding_idx's row gets no gradient
    np.testing.assert_allclose(weight.grad.to_dense().numpy(), numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_embedding_bag_sparse_gradient_matches_pytorch(mode, weighted):
    if weighted and mode != "sum":
        pytest.skip("per_sample_weights is for mode='sum' only")
    flat, offsets = np.array([2, 0, 2, 5, 1, 1, 4]), np.array([0, 3, 3, 5])
    sample = RNG.standard_normal(flat.size)
    results = []
    for lib in (numdiff, torch):
        bag = lib.nn.EmbeddingBag(7, 4, mode=mode, sparse=True, padding_idx=0, _weight=lib.tensor(TABLE.copy()))
        weights = lib.tensor(sample, requires_grad=True) if weighted else None
        out = bag(lib.tensor(flat), lib.tensor(offsets), per_sample_weights=weights)
        (out * lib.arange(16.0, dtype=lib.float64).reshape(4, 4)).sum().backward()
        grad = bag.weight.grad
        assert grad.is_sparse
        indices = grad._indices()
        values = grad._values()
        results.append((out.detach().numpy(), indices.numpy(), values.numpy(), None if weights is None else weights.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_array_equal(results[0][1], results[1][1])
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-12)
    if weighted:
        np.testing.assert_allclose(results[0][3], results[1][3], rtol=1e-12)


def test_max_norm_renormalises_before_a_sparse_lookup_as_in_pytorch():
    grads = []
    for lib in (numdiff, torch):
        emb = lib.nn.Embedding(7, 4, max_norm=1.0, sparse=True, _weight=lib.tensor(TABLE.copy()))
        emb(lib.tensor(IDS)).sum().backward()
        grads.append((emb.weight.detach().numpy(), emb.weight.grad.to_dense().numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-7)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-12)


def _accumulated(lib, first, second):
    """`.grad` after two backward passes into one weight; each pass is "sparse" or "dense"."""
    weight = lib.tensor(TABLE.copy(), requires_grad=True)
    for kind, ids in ((first, [1, 1, 4]), (second, [4, 2])):
        lib.nn.functional.embedding(lib.tensor(ids), weight, sparse=kind == "sparse").pow(2).sum().backward()
    return weight.grad


@pytest.mark.parametrize(("first", "second"), [("sparse", "sparse"), ("dense", "sparse"), ("sparse", "dense")])
def test_gradients_of_one_weight_add_up_as_in_pytorch(first, second):
    ours, theirs = _accumulated(numdiff, first, second), _accumulated(torch, first, second)
    assert ours.is_sparse == theirs.is_sparse
    if ours.is_sparse:
        # Both index lists kept (torch's merge may sum an entry where the two lists meet).
        assert ours._nnz() == 5 and not ours.is_coalesced()
        ours, theirs = ours.to_dense(), theirs.to_dense()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_one_backward_summing_sparse_and_dense_paths_gives_pytorchs_layout():
    for build in (
        lambda lib, w: lib.nn.functional.embedding(lib.tensor([1, 1]), w, sparse=True).sum() * 3 + w.sum(),
        lambda lib, w: sum(lib.nn.functional.embedding(lib.tensor(i), w, sparse=True).sum() for i in ([1, 1], [2])),
    ):
        results = []
        for lib in (numdiff, torch):
            weight = lib.tensor(TABLE.copy(), requires_grad=True)
            build(lib, weight).backward()
            grad = weight.grad
            results.append((grad.is_sparse, (grad.to_dense() if grad.is_sparse else grad).numpy()))
        assert results[0][0] == results[1][0]
        np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)


def test_autograd_grad_returns_the_sparse_gradient():
    weight = numdiff.tensor(TABLE.copy(), requires_grad=True)
    (grad,) = numdiff.autograd.grad(nf.embedding(numdiff.tensor([5, 5]), weight, sparse=True).sum(), [weight])
    assert grad.is_sparse and weight.grad is None
    np.testing.assert_array_equal(grad.to_dense().numpy()[5], [2.0] * 4)


def test_zero_grad_keeps_a_sparse_gradient_with_no_entries():
    emb = numdiff.nn.Embedding(7, 4, sparse=True)
    emb(numdiff.tensor(IDS)).sum().backward()
    numdiff.optim.SGD(emb.parameters(), lr=0.1).zero_grad(set_to_none=False)
    assert emb.weight.grad.is_sparse and emb.weight.grad._nnz() == 0
    np.testing.assert_array_equal(emb.weight.grad.to_dense().numpy(), np.zeros((7, 4)))
    emb.zero_grad()
    assert emb.weight.grad is None


def test_clip_grad_norm_of_sparse_gradients_is_that_of_their_dense_form():
    sparse_emb = numdiff.nn.Embedding(7, 4, sparse=True, _weight=numdiff.tensor(TABLE.copy()))
    dense_emb = numdiff.nn.Embedding(7, 4, _weight=numdiff.tensor(TABLE.copy()))
    extra = [numdiff.nn.Parameter(numdiff.ones(3)) for _ in range(2)]
    for emb, p in zip((sparse_emb, dense_emb), extra):
        (emb(numdiff.tensor(IDS)).pow(2).sum() + p.sum()).backward()
    norms = [numdiff.nn.utils.clip_grad_norm_([emb.weight, p], 0.5) for emb, p in zip((sparse_emb, dense_emb), extra)]
    np.testing.assert_allclose(norms[0].numpy(), norms[1].numpy(), rtol=1e-12)
    np.testing.assert_allclose(sparse_emb.weight.grad.to_dense().numpy(), dense_emb.weight.grad.numpy(), rtol=1e-12)


def test_bad_inputs_are_refused_before_a_kernel_runs():
    weight = numdiff.tensor(TABLE.copy(), requires_grad=True)
    with pytest.raises(IndexError, match=r"embedding: indices must be in \[0, 6\].*got values in \[0, 7\]"):
        nf.embedding(numdiff.tensor([0, 7]), weight, sparse=True)
    with pytest.raises(TypeError, match="embedding: input must be an integer tensor"):
        nf.embedding(numdiff.tensor([0.0, 1.0]), weight, sparse=True)
    with pytest.raises(RuntimeError, match="embedding: scale_grad_by_freq not supported with sparse gradients"):
        nf.embedding(numdiff.tensor([0, 1]), weight, scale_grad_by_freq=True, sparse=True)
    with pytest.raises(ValueError, match="embedding_bag: max mode does not support sparse weights"):
        nf.embedding_bag(numdiff.tensor([[0, 1]]), weight, mode="max", sparse=True)
    with pytest.raises(IndexError, match=r"embedding_bag: indices must be in \[0, 6\]"):
        nf.embedding_bag(numdiff.tensor([[0, -1]]), weight, mode="sum", sparse=True)


def test_a_weight_that_needs_no_gradient_looks_up_as_without_sparse():
    weight = numdiff.tensor(TABLE.copy())
    out = nf.embedding(numdiff.tensor(IDS), weight, sparse=True)
    np.testing.assert_array_equal(out.numpy(), TABLE[IDS])
    with numdiff.no_grad():
        trainable = numdiff.tensor(TABLE.copy(), requires_grad=True)
        assert nf.embedding(numdiff.tensor(IDS), trainable, sparse=True).grad_fn is None


def test_compile_and_func_transforms_refuse_sparse_gradients_by_name():
    emb = numdiff.nn.Embedding(7, 4, sparse=True)
    compiled = numdiff.compile(lambda ids: emb(ids).sum())
    with pytest.raises(NotImplementedError, match="embedding: sparse=True gradients are not supported inside numdiff.compile"):
        compiled(numdiff.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="embedding: sparse=True gradients are not supported"):
        numdiff.func.grad(lambda w: nf.embedding(numdiff.tensor([1]), w, sparse=True).sum())(numdiff.ones(7, 4))
