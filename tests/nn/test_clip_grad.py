"""numdiff.nn.utils: clip_grad_norm_ / clip_grad_value_ against PyTorch, and vector conversion."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)

torch = pytest.importorskip("torch")


def _twin_params(rng, scale):
    arrays = [rng.standard_normal((3, 2)) * scale, rng.standard_normal(4) * scale]
    ours, theirs = [], []
    for a in arrays:
        p = nn.Parameter(numdiff.zeros(*a.shape, dtype=numdiff.float64))
        p.grad = numdiff.tensor(a)
        q = torch.nn.Parameter(torch.zeros(a.shape, dtype=torch.float64))
        q.grad = torch.tensor(a)
        ours.append(p)
        theirs.append(q)
    return ours, theirs


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("scale", [0.01, 10.0], ids=["below-max", "above-max"])
def test_clip_grad_norm_matches_torch(rng, norm_type, scale):
    ours, theirs = _twin_params(rng, scale)
    total = clip_grad_norm_(ours, max_norm=1.0, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm=1.0, norm_type=norm_type)
    assert total.item() == pytest.approx(expected.item(), rel=1e-12)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_really_clips_to_max_norm(rng):
    ours, _ = _twin_params(rng, 10.0)
    before = clip_grad_norm_(ours, max_norm=0.5)
    after = math.sqrt(sum(float((p.grad.numpy() ** 2).sum()) for p in ours))
    assert before.item() > 0.5 and after == pytest.approx(0.5, rel=1e-5)


def test_clip_grad_norm_skips_parameters_without_grad_and_accepts_one_tensor():
    p = nn.Parameter(numdiff.ones(2))
    assert clip_grad_norm_([p, nn.Parameter(numdiff.ones(1))], 1.0).item() == 0.0
    p.grad = numdiff.tensor([3.0, 4.0])
    assert clip_grad_norm_(p, 1.0).item() == pytest.approx(5.0)
    assert p.grad.tolist() == pytest.approx([0.6, 0.8], rel=1e-5)


def test_clip_grad_norm_error_if_nonfinite():
    p = nn.Parameter(numdiff.ones(2))
    p.grad = numdiff.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="total norm of order 2.0 of the gradients is inf"):
        clip_grad_norm_(p, 1.0, error_if_nonfinite=True)


@pytest.mark.parametrize("norm_type", [1.0, 2.0, math.inf])
def test_get_total_norm_then_clip_grads_with_norm_matches_torch(rng, norm_type):
    # torch 2.6's split of clip_grad_norm_: the norm of any tensors, then a scale by a given norm.
    ours, theirs = _twin_params(rng, 10.0)
    total = get_total_norm([p.grad for p in ours], norm_type)
    expected = torch.nn.utils.get_total_norm([q.grad for q in theirs], norm_type)
    assert total.item() == pytest.approx(expected.item(), rel=1e-12)
    clip_grads_with_norm_(ours, 2.0, total * 2)
    torch.nn.utils.clip_grads_with_norm_(theirs, 2.0, expected * 2)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)
    assert get_total_norm([]).item() == 0.0 and get_total_norm(numdiff.tensor([3.0, 4.0])).item() == 5.0


def test_get_total_norm_error_if_nonfinite_names_the_norm():
    with pytest.raises(RuntimeError, match="total norm of order 1.0 of the gradients is nan"):
        get_total_norm([numdiff.tensor([float("nan"), 1.0])], 1, error_if_nonfinite=True)


def test_clip_grad_value_clamps_in_place(rng):
    ours, theirs = _twin_params(rng, 2.0)
    clip_grad_value_(ours, 0.5)
    torch.nn.utils.clip_grad_value_(theirs, 0.5)
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_parameters_to_vector_and_back():
    layer = nn.Linear(2, 3)
    vector = parameters_to_vector(layer.parameters())
    assert vector.shape == (9,) and vector.requires_grad
    vector_to_parameters(numdiff.arange(9).float(), layer.parameters())
    assert layer.weight.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]] and layer.bias.tolist() == [6.0, 7.0, 8.0]
    with pytest.raises(ValueError, match="hold 9 values but the vector has 4"):
        vector_to_parameters(numdiff.zeros(4), layer.parameters())
