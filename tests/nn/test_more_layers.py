"""The functions of numdiff.nn._more_functional and their modules, the lazy modules and nn.Buffer,
against torch: values and gradients in float64, a gradcheck, and bad input refused by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as tf

import numdiff
import numdiff.nn as nn
import numdiff.nn.functional as nf
from numdiff.autograd import gradcheck

RNG = np.random.default_rng(11)
X3 = RNG.standard_normal((2, 4, 9))
X4 = RNG.standard_normal((2, 4, 6, 6))
POSITIVE4 = np.abs(X4) + 0.1
ROWS = RNG.standard_normal((5, 3))
NEGATIVES = RNG.standard_normal((5, 3))
SCORES = RNG.standard_normal((3, 5))
LABELS = np.array([[3, 0, -1, 1, 2], [1, 2, 3, -1, 0], [4, -1, 2, 2, 2]])
# A class listed twice before the -1 counts twice in PyTorch (numdiff counted it once).
REPEATED_LABELS = np.array([[2, 2, -1, 0, 0], [1, 4, 1, 1, -1], [0, 1, 2, 3, 4]])

# name -> (function(library functional, inputs), inputs)
CASES = {
    "adaptive_max_pool1d": (lambda f, x: f.adaptive_max_pool1d(x, 4), [X3]),
    "lp_pool1d": (lambda f, x: f.lp_pool1d(x, 2.0, 3, 2), [np.abs(X3) + 0.1]),
    "lp_pool2d": (lambda f, x: f.lp_pool2d(x, 3, (2, 3)), [POSITIVE4]),
    "max_unpool1d": (lambda f, x: f.max_unpool1d(*f.max_pool1d(x, 3, return_indices=True), 3), [X3]),
    "max_unpool2d": (lambda f, x: f.max_unpool2d(*f.max_pool2d(x, 2, return_indices=True), 2, output_size=(7, 7)), [X4]),
    "pdist": (lambda f, x: f.pdist(x), [ROWS]),
    "pdist_p1": (lambda f, x: f.pdist(x, 1.0), [ROWS]),
    "channel_shuffle": (lambda f, x: f.channel_shuffle(x, 2), [X4]),
    "multilabel_margin_loss": (lambda f, x: f.multilabel_margin_loss(x, _labels(f)), [SCORES]),
    "multilabel_margin_loss_none": (lambda f, x: f.multilabel_margin_loss(x, _labels(f), reduction="none"), [SCORES]),
    "multilabel_margin_loss_repeated": (
        lambda f, x: f.multilabel_margin_loss(x, _labels(f, REPEATED_LABELS), reduction="none"), [SCORES]
    ),
    "triplet_with_distance": (
        lambda f, a, p, n: f.triplet_margin_with_distance_loss(a, p, n, margin=0.5, swap=True), [ROWS, ROWS * 0.5, NEGATIVES]
    ),
    "triplet_with_cosine": (
        lambda f, a, p, n: f.triplet_margin_with_distance_loss(
            a, p, n, distance_function=lambda u, v: 1 - f.cosine_similarity(u, v)
        ),
        [ROWS, ROWS * 0.5, NEGATIVES],
    ),
}


def _labels(f, labels=LABELS):
    return (torch if f is tf else numdiff).tensor(labels)


@pytest.mark.parametrize("case", sorted(CASES))
def test_value_and_gradient_match_torch(case):
    function, arrays = CASES[case]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours_in = [numdiff.tensor(a, requires_grad=True) for a in arrays]
    theirs, ours = function(tf, *theirs_in), function(nf, *ours_in)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = RNG.standard_normal(tuple(theirs.shape))
    (theirs * torch.tensor(weights)).sum().backward()
    (ours * numdiff.tensor(weights)).sum().backward()
    for mine, their in zip(ours_in, theirs_in):
        np.testing.assert_allclose(mine.grad.numpy(), their.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", ["lp_pool2d", "max_unpool2d", "pdist", "multilabel_margin_loss", "multilabel_margin_loss_repeated", "triplet_with_distance"])
def test_float64_gradcheck(case):
    function, arrays = CASES[case]
    inputs = [numdiff.tensor(a, requires_grad=True) for a in arrays]
    assert gradcheck(lambda *xs: function(nf, *xs), inputs)


def test_inplace_activations_and_with_indices_forms():
    x = numdiff.tensor([-1.0, 0.5, 2.0])
    assert nf.relu_(x) is x and x.tolist() == [0.0, 0.5, 2.0]
    y = numdiff.tensor([-2.0, 3.0])
    nf.hardtanh_(y)
    assert y.tolist() == [-1.0, 1.0]
    values, indices = nf.max_pool2d_with_indices(numdiff.tensor(X4), 2)
    their_values, their_indices = tf.max_pool2d(torch.tensor(X4), 2, return_indices=True)
    assert indices.tolist() == their_indices.tolist()
    values, indices = nf.adaptive_max_pool1d_with_indices(numdiff.tensor(X3), 3)
    assert indices.tolist() == tf.adaptive_max_pool1d(torch.tensor(X3), 3, return_indices=True)[1].tolist()


def test_gumbel_softmax_is_a_distribution_and_hard_is_one_hot_with_soft_gradients():
    logits = numdiff.randn(6, 5, requires_grad=True)
    soft = nf.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).detach().numpy(), 1.0, rtol=1e-6)
    hard = nf.gumbel_softmax(logits, hard=True)
    assert sorted(set(hard.detach().numpy().ravel().tolist())) == [0.0, 1.0]
    (hard * numdiff.arange(5.0)).sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0


def test_modules_match_their_functions():
    x = numdiff.tensor(X4)
    pool = nn.MaxPool2d(2, return_indices=True)
    values, indices = pool(x)
    assert numdiff.equal(nn.MaxUnpool2d(2)(values, indices), nf.max_unpool2d(values, indices, 2))
    assert numdiff.allclose(nn.LPPool2d(2, 2)(numdiff.tensor(POSITIVE4)), nf.lp_pool2d(numdiff.tensor(POSITIVE4), 2, 2))
    assert tuple(nn.AdaptiveMaxPool1d(3)(numdiff.tensor(X3)).shape) == (2, 4, 3)
    np.testing.assert_allclose(nn.Softmax2d()(x).detach().numpy(), torch.nn.Softmax2d()(torch.tensor(X4)).numpy())
    assert numdiff.equal(nn.ChannelShuffle(2)(x), nf.channel_shuffle(x, 2))
    loss = nn.MultiLabelMarginLoss()(numdiff.tensor(SCORES), numdiff.tensor(LABELS))
    assert abs(loss.item() - tf.multilabel_margin_loss(torch.tensor(SCORES), torch.tensor(LABELS)).item()) < 1e-12
    assert isinstance(nn.NLLLoss2d(), nn.NLLLoss)


def test_lazy_modules_infer_their_size_and_keep_the_parameter_objects():
    model = nn.Sequential(nn.LazyConv2d(3, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2))
    early = list(model.parameters())
    optimizer = numdiff.optim.SGD(early, lr=0.1)
    out = model(numdiff.randn(2, 4, 5, 5))
    assert tuple(out.shape) == (2, 2)
    assert [type(m).__name__ for m in model] == ["Conv2d", "BatchNorm2d", "ReLU", "Flatten", "Linear"]
    assert [p is q for p, q in zip(early, model.parameters())] == [True] * 6
    assert tuple(model[0].weight.shape) == (3, 4, 3, 3) and tuple(model[4].weight.shape) == (2, 75)
    before = model[4].weight.detach().clone()
    out.sum().backward()
    optimizer.step()
    assert not numdiff.equal(before, model[4].weight)
    assert tuple(model[1].running_mean.shape) == (3,)
    with pytest.raises(ValueError, match="LazyLinear: cannot infer"):
        nn.LazyLinear(3)(numdiff.tensor(1.0))


def test_buffer_registers_on_assignment():
    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mean = nn.Buffer(numdiff.ones(2))
            self.scratch = nn.Buffer(numdiff.zeros(3), persistent=False)

    model = Model()
    assert [name for name, _ in model.named_buffers()] == ["mean", "scratch"]
    assert list(model.state_dict()) == ["mean"]


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: nf.adaptive_max_pool1d(numdiff.ones(2, 3, 4, 5), 2), ValueError, "adaptive_max_pool1d: expected"),
        (lambda: nf.lp_pool2d(numdiff.ones(1, 1, 4, 4), 0, 2), ValueError, "lp_pool2d: norm_type"),
        (lambda: nf.max_unpool2d(numdiff.ones(1, 1, 2, 2), numdiff.zeros(1, 1, 2, 3, dtype=numdiff.int64), 2), ValueError, "max_unpool2d: indices"),
        (lambda: nf.max_unpool1d(numdiff.ones(1, 1, 2), numdiff.tensor([[[0, 9]]]), 2), IndexError, "max_unpool1d: an index"),
        (lambda: nf.max_unpool2d(numdiff.ones(1, 1, 2, 2), numdiff.zeros(1, 1, 2, 2, dtype=numdiff.int64), 2, output_size=(9, 9)), ValueError, "output_size"),
        (lambda: nf.pdist(numdiff.ones(3)), ValueError, "pdist: input must be 2-D"),
        (lambda: nf.channel_shuffle(numdiff.ones(1, 3, 2), 2), ValueError, "channel_shuffle: 3 channels"),
        (lambda: nf.gumbel_softmax(numdiff.ones(3), tau=0.0), ValueError, "gumbel_softmax: tau"),
        (lambda: nf.multilabel_margin_loss(numdiff.ones(2, 3), numdiff.tensor([[5, -1, 0], [0, 1, 2]])), IndexError, "multilabel_margin_loss: target class 5"),
        (lambda: nf.multilabel_margin_loss(numdiff.ones(2, 3), numdiff.ones(2, 3)), TypeError, "multilabel_margin_loss: target"),
        (lambda: nn.Softmax2d()(numdiff.ones(2, 3)), ValueError, "Softmax2d"),
    ],
)
def test_bad_input_is_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()
