"""word2vec with sparse gradients, written as a PyTorch program and run on numdiff: skip-gram
with negative sampling (two ``nn.Embedding(vocab, dim, sparse=True)`` tables, SparseAdam) and
CBOW (``nn.EmbeddingBag(mode="mean", sparse=True)`` over the context, Adagrad), plus a
matrix-factorisation recommender (user and item embeddings, SGD with momentum).

A synthetic corpus of topics: words of one topic co-occur. After training, words of one topic
must be closer (cosine) than words of different topics, and the same program on torch, started
from the same tables and fed the same batches, must reach the same parameters.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff as torch
import numdiff.nn as nn
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling

VOCAB, TOPICS, DIM = 40, 4, 8


def make_batches(steps=30, batch=32, negatives=5, window=2, seed=0):
    """(centre, context (batch, 2*window), negatives (batch, negatives)) per step: a context word
    shares the centre word's topic (word % TOPICS), negatives are drawn uniformly."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(steps):
        centre = rng.integers(0, VOCAB, batch)
        offsets = rng.integers(0, VOCAB // TOPICS, (batch, 2 * window)) * TOPICS
        context = (centre[:, None] % TOPICS + offsets) % VOCAB
        batches.append((centre, context, rng.integers(0, VOCAB, (batch, negatives))))
    return batches


def word2vec_models(torch, nn, F):  # noqa: N803 - the usual PyTorch spellings
    """The two models, written against the `torch`, `nn` and `F` given (numdiff's or torch's)."""

    class SkipGram(nn.Module):
        def __init__(self, vocab, dim):
            super().__init__()
            self.centre = nn.Embedding(vocab, dim, sparse=True)
            self.context = nn.Embedding(vocab, dim, sparse=True)

        def forward(self, centre, context, negatives):
            v = self.centre(centre)  # (B, D)
            positive = (self.context(context) * v.unsqueeze(1)).sum(-1)  # (B, 2w)
            negative = torch.bmm(self.context(negatives), v.unsqueeze(2)).squeeze(2)  # (B, k)
            return -(F.logsigmoid(positive).sum(1) + F.logsigmoid(-negative).sum(1)).mean()


    class CBOW(nn.Module):
        def __init__(self, vocab, dim):
            super().__init__()
            self.context = nn.EmbeddingBag(vocab, dim, mode="mean", sparse=True)
            self.out = nn.Embedding(vocab, dim, sparse=True)

        def forward(self, centre, context, negatives):
            h = self.context(context)  # (B, D): the mean of the context rows
            targets = torch.cat([centre.unsqueeze(1), negatives], 1)  # (B, 1 + k)
            scores = (self.out(targets) * h.unsqueeze(1)).sum(-1)
            labels = torch.zeros_like(scores)
            labels[:, 0] = 1.0
            return F.binary_cross_entropy_with_logits(scores, labels)

    return {"SkipGram": SkipGram, "CBOW": CBOW}


def train(lib, model_class, optimizer_class, options, tables, batches):
    model = model_class(VOCAB, DIM)
    with lib.no_grad():
        for p, table in zip(model.parameters(), tables):
            p.copy_(lib.tensor(table))
    optimizer = optimizer_class(model.parameters(), **options)
    losses = []
    for centre, context, negatives in batches:
        optimizer.zero_grad()
        loss = model(lib.tensor(centre), lib.tensor(context), lib.tensor(negatives))
        loss.backward()
        assert all(p.grad.is_sparse for p in model.parameters())
        optimizer.step()
        losses.append(float(loss.item()))
    return model, losses


def topic_separation(table):
    """Mean cosine between words of one topic minus that between words of different topics."""
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    cosine = unit @ unit.T
    same = (np.arange(VOCAB)[:, None] % TOPICS) == (np.arange(VOCAB)[None, :] % TOPICS)
    np.fill_diagonal(same, False)
    different = ~same
    np.fill_diagonal(different, False)
    return cosine[same].mean() - cosine[different].mean()


@pytest.mark.parametrize(
    ("model_name", "optimizer_name", "options"),
    [("SkipGram", "SparseAdam", {"lr": 0.1}), ("CBOW", "Adagrad", {"lr": 0.3})],
)
def test_word2vec_learns_topics_and_matches_torch(model_name, optimizer_name, options):
    real_torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    tables = [rng.standard_normal((VOCAB, DIM)).astype(np.float32) * 0.3 for _ in range(2)]
    batches = make_batches()
    model_class = word2vec_models(torch, nn, F)[model_name]
    model, losses = train(torch, model_class, getattr(torch.optim, optimizer_name), options, tables, batches)
    assert losses[-1] < 0.8 * losses[0]
    learned = model.parameters().__next__().detach().numpy()
    assert topic_separation(learned) > 0.3 + topic_separation(tables[0])

    import torch.nn.functional as torch_functional

    theirs = word2vec_models(real_torch, real_torch.nn, torch_functional)[model_name]
    their_model, their_losses = train(
        real_torch, theirs, getattr(real_torch.optim, optimizer_name), options, tables, batches
    )
    np.testing.assert_allclose(losses, their_losses, rtol=1e-5)
    for ours, their in zip(model.parameters(), their_model.parameters()):
        np.testing.assert_allclose(ours.detach().numpy(), their.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_matrix_factorisation_recommender_with_sparse_sgd():
    rng = np.random.default_rng(2)
    users, items, rank = 30, 25, 3
    truth = rng.standard_normal((users, rank)) @ rng.standard_normal((rank, items))
    user_emb, item_emb = nn.Embedding(users, 6, sparse=True), nn.Embedding(items, 6, sparse=True)
    user_bias = nn.Embedding(users, 1, sparse=True, _weight=torch.zeros(users, 1))
    params = [*user_emb.parameters(), *item_emb.parameters(), *user_bias.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.5, momentum=0.5)
    first = None
    for _ in range(400):
        u, i = rng.integers(0, users, 64), rng.integers(0, items, 64)
        uid, iid = torch.tensor(u), torch.tensor(i)
        prediction = (user_emb(uid) * item_emb(iid)).sum(1) + user_bias(uid).squeeze(1)
        loss = F.mse_loss(prediction, torch.tensor(truth[u, i], dtype=torch.float32))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        first = float(loss.item()) if first is None else first
    with torch.no_grad():
        full = user_emb.weight @ item_emb.weight.T + user_bias.weight
    error = float(((full.numpy() - truth) ** 2).mean())
    assert error < 0.2 * float((truth**2).mean()) and error < 0.2 * first
