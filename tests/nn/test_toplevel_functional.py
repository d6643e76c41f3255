"""torch's top-level spellings of nn.functional calls, with their own argument orders (weight first
for embedding, running statistics after weight and bias for batch_norm, int reductions), against
torch on the same inputs, with gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff

RNG = np.random.default_rng(5)
X = RNG.standard_normal((2, 3, 5, 5))
W = RNG.standard_normal((4, 3, 3, 3))
TABLE = RNG.standard_normal((10, 3))
LOGITS = RNG.standard_normal(6)
TARGETS = (RNG.random(6) > 0.5).astype(np.float64)

CASES = {
    "conv2d": (lambda t, x, w: t.conv2d(x, w, None, 1, 1), [X, W]),
    "layer_norm": (lambda t, x: t.layer_norm(x, (5,), None, None, 1e-5, True), [X]),
    "group_norm": (lambda t, x: t.group_norm(x, 3, None, None, 1e-5, True), [X]),
    "batch_norm": (lambda t, x: t.batch_norm(x, None, None, None, None, True, 0.1, 1e-5, False), [X]),
    "instance_norm": (lambda t, x: t.instance_norm(x, None, None, None, None, True, 0.1, 1e-5, False), [X]),
    "rms_norm": (lambda t, x: t.rms_norm(x, (5,), None, 1e-6), [X]),
    "embedding": (lambda t, w: t.embedding(w, t.tensor([[1, 4], [9, 1]])), [TABLE]),
    "dropout_eval": (lambda t, x: t.dropout(x, 0.5, False), [X]),
    "threshold": (lambda t, x: t.threshold(x, 0.1, -2.0), [X]),
    "max_pool2d": (lambda t, x: t.max_pool2d(x, 2, 1), [X]),
    "max_pool3d": (lambda t, x: t.max_pool3d(x, 2, 1, 1, 1, True), [X[:, :, :4]]),
    "conv3d": (lambda t, x, w: t.conv3d(x, w, None, 1, 1), [X[:, :, None], W[:, :, None]]),
    "conv_transpose3d": (lambda t, x, w: t.conv_transpose3d(x, w, None, 2, 1, 1), [X[:, None], W[None, :3]]),
    "adaptive_max_pool1d": (lambda t, x: t.adaptive_max_pool1d(x[:, :, 0], 3)[0], [X]),
    "pixel_shuffle": (lambda t, x: t.pixel_shuffle(x[:, :, :2, :2].reshape(2, 12, 1, 1)[:, :4], 2), [X]),
    "bce_with_logits_none": (lambda t, x: t.binary_cross_entropy_with_logits(x, t.tensor(TARGETS), None, None, 0), [LOGITS]),
    "bce_with_logits_sum": (lambda t, x: t.binary_cross_entropy_with_logits(x, t.tensor(TARGETS), None, None, 2), [LOGITS]),
    "kl_div": (lambda t, x: t.kl_div(t.log_softmax(x, 0), t.softmax(t.tensor(TARGETS) * 2, 0), 1), [LOGITS]),
    "hinge_embedding_loss": (lambda t, x: t.hinge_embedding_loss(x, t.tensor(TARGETS) * 2 - 1, 1.0, 2), [LOGITS]),
    "margin_ranking_loss": (lambda t, x: t.margin_ranking_loss(x, x.flip(0), t.tensor(TARGETS) * 2 - 1, 0.1, 1), [LOGITS]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_toplevel_spelling_matches_torch(case):
    function, arrays = CASES[case]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours_in = [numdiff.tensor(a, requires_grad=True) for a in arrays]
    theirs, ours = function(torch, *theirs_in), function(numdiff, *ours_in)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-9, atol=1e-12)
    weights = RNG.standard_normal(tuple(theirs.shape))
    (theirs * torch.tensor(weights)).sum().backward()
    (ours * numdiff.tensor(weights)).sum().backward()
    for mine, their in zip(ours_in, theirs_in):
        np.testing.assert_allclose(mine.grad.numpy(), their.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_an_unknown_int_reduction_is_refused_by_name():
    with pytest.raises(ValueError, match="kl_div: reduction must be 0"):
        numdiff.kl_div(numdiff.ones(2), numdiff.ones(2), 3)
