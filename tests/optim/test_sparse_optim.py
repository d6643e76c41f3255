"""Optimizers over sparse embedding gradients, against torch on the same program: SGD (plain,
momentum, dampening, Nesterov, maximize), Adagrad (lr_decay, initial accumulator) and SparseAdam,
for several steps with repeated indices, padding_idx, an embedding used twice and a dense
parameter beside it; and the refusals PyTorch makes, in its words."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

TOLERANCE = {"float32": 1e-6, "float64": 1e-12}
CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.2, "lr_decay": 0.1, "initial_accumulator_value": 0.3, "eps": 1e-6, "maximize": True}),
    ("SparseAdam", {"lr": 0.05}),
    ("SparseAdam", {"lr": 0.1, "betas": (0.8, 0.9), "eps": 1e-6, "maximize": True}),
]


def _train(lib, name, options, dtype, steps=4):
    """A skip-gram-like step: centre and context rows of two sparse tables (one with padding_idx),
    dot products through a sigmoid loss; the centre table is looked up twice per step."""
    rng = np.random.default_rng(0)
    table_in = rng.standard_normal((12, 5)).astype(dtype) * 0.5
    table_out = rng.standard_normal((12, 5)).astype(dtype) * 0.5
    centre = lib.nn.Embedding(12, 5, sparse=True, _weight=lib.tensor(table_in))
    context = lib.nn.Embedding(12, 5, sparse=True, padding_idx=0, _weight=lib.tensor(table_out))
    optimizer = getattr(lib.optim, name)([*centre.parameters(), *context.parameters()], **options)
    for step in range(steps):
        ids = lib.tensor(rng.integers(0, 12, size=(6,)))
        ids[0] = ids[1] = 3  # a repeated row every step
        near = lib.tensor(rng.integers(0, 12, size=(6, 3)))
        near[0, 0] = 0  # padding: no gradient for row 0 of the context table
        optimizer.zero_grad(set_to_none=step % 2 == 0)
        scores = (centre(ids).unsqueeze(1) * context(near)).sum(-1)
        loss = -lib.nn.functional.logsigmoid(scores).sum() + 0.1 * centre(ids[:2]).pow(2).sum()
        loss.backward()
        assert centre.weight.grad.is_sparse and context.weight.grad.is_sparse
        optimizer.step()
    return [p.detach().numpy() for p in (centre.weight, context.weight)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("name", "options"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_sparse_steps_match_pytorch(name, options, dtype):
    ours, theirs = _train(numdiff, name, options, dtype), _train(torch, name, options, dtype)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


def test_sparse_adam_state_matches_pytorch():
    states = []
    for lib in (numdiff, torch):
        emb = lib.nn.Embedding(6, 3, sparse=True, _weight=lib.ones(6, 3, dtype=lib.float64))
        optimizer = lib.optim.SparseAdam(emb.parameters(), lr=0.1)
        for ids in ([1, 1, 4], [4, 5]):
            optimizer.zero_grad()
            (emb(lib.tensor(ids)) * lib.arange(3.0, dtype=lib.float64)).sum().backward()
            optimizer.step()
        state = optimizer.state[emb.weight]
        states.append((state["step"], state["exp_avg"].numpy(), state["exp_avg_sq"].numpy()))
    assert states[0][0] == states[1][0] == 2
    for a, b in zip(states[0][1:], states[1][1:]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def _sparse_grad_param():
    emb = numdiff.nn.Embedding(5, 2, sparse=True)
    emb(numdiff.tensor([1, 2])).sum().backward()
    return emb.weight


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Adam", "Adam does not support sparse gradients, please consider SparseAdam instead"),
        ("AdamW", "Adam does not support sparse gradients, please consider SparseAdam instead"),
        ("RMSprop", "RMSprop does not support sparse gradients"),
        ("Adamax", "Adamax does not support sparse gradients"),
        ("NAdam", "NAdam does not support sparse gradients"),
        ("Rprop", "Rprop does not support sparse gradients"),
    ],
)
def test_optimizers_without_a_sparse_path_refuse_with_pytorchs_words(name, message):
    optimizer = getattr(numdiff.optim, name)([_sparse_grad_param()])
    with pytest.raises(RuntimeError, match=message):
        optimizer.step()


def test_sparse_adam_refuses_dense_gradients_and_bad_arguments():
    p = numdiff.nn.Parameter(numdiff.zeros(3))
    p.grad = numdiff.ones(3)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, please consider Adam instead"):
        numdiff.optim.SparseAdam([p]).step()
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        numdiff.optim.SparseAdam([p], lr=-1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        numdiff.optim.SparseAdam([p], betas=(0.9, 1.0))


def test_weight_decay_with_sparse_gradients_is_refused():
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible with sparse gradients"):
        numdiff.optim.Adagrad([_sparse_grad_param()], weight_decay=0.1).step()
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        numdiff.optim.SGD([_sparse_grad_param()], lr=0.1, weight_decay=0.1).step()


def test_sgd_momentum_buffer_stays_sparse_and_uncoalesced_as_in_pytorch():
    buffers = []
    for lib in (numdiff, torch):
        emb = lib.nn.Embedding(5, 2, sparse=True)
        optimizer = lib.optim.SGD(emb.parameters(), lr=0.1, momentum=0.9)
        for ids in ([1, 1], [2]):
            optimizer.zero_grad()
            emb(lib.tensor(ids)).sum().backward()
            optimizer.step()
        buffer = optimizer.state[emb.weight]["momentum_buffer"]
        buffers.append((buffer.is_sparse, buffer._nnz(), buffer.to_dense().numpy()))
    assert buffers[0][:2] == buffers[1][:2] == (True, 3)
    np.testing.assert_allclose(buffers[0][2], buffers[1][2], rtol=1e-6)


def test_an_assigned_sparse_grad_steps_as_in_pytorch():
    results = []
    for lib in (numdiff, torch):
        p = lib.nn.Parameter(lib.ones(4, 2, dtype=lib.float64))
        p.grad = lib.sparse_coo_tensor([[3, 0, 3]], lib.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=lib.float64), (4, 2))
        lib.optim.Adagrad([p], lr=0.5).step()
        results.append(p.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)
    p = numdiff.nn.Parameter(numdiff.ones(4, 2))
    with pytest.raises(RuntimeError, match=r"assigned grad has shape \(5, 2\)"):
        p.grad = numdiff.sparse_coo_tensor([[1]], numdiff.ones(1, 2), (5, 2))
    with pytest.raises(TypeError, match="assigned grad must be a Tensor, a sparse tensor or None, got list"):
        p.grad = [1.0]
