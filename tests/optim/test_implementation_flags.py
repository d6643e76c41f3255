"""PyTorch's implementation flags (foreach, fused, capturable, differentiable): each optimizer takes
exactly the ones torch's takes; foreach and fused change nothing (numdiff has one implementation of
each optimizer), capturable=True and differentiable=True are refused by name."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

NAMES = ["SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Rprop", "ASGD", "Adadelta", "Adamax", "NAdam", "RAdam"]
FLAGS = {"foreach", "capturable", "differentiable", "fused"}


def _flags(cls) -> set[str]:
    return FLAGS & set(inspect.signature(cls.__init__).parameters)


@pytest.mark.parametrize("name", NAMES)
def test_each_optimizer_takes_torchs_flags_and_they_change_no_step(name):
    ours = getattr(numdiff.optim, name)
    assert _flags(ours) == _flags(getattr(torch.optim, name))
    start = np.array([1.0, -2.0, 3.0])
    results = []
    for flags in ({}, {"foreach": False}, {"foreach": True}, *([{"fused": True}] if "fused" in _flags(ours) else [])):
        p = numdiff.nn.Parameter(numdiff.tensor(start))
        optimizer = ours([p], lr=0.1, **flags)
        for _ in range(3):
            optimizer.zero_grad()
            (p * p).sum().backward()
            optimizer.step()
        results.append(p.detach().numpy())
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])


@pytest.mark.parametrize("name", NAMES)
def test_unsupported_flags_are_refused_by_name(name):
    cls = getattr(numdiff.optim, name)
    params = [numdiff.nn.Parameter(numdiff.ones(2))]
    with pytest.raises(ValueError, match=f"{name}: differentiable=True \\(a step recorded by autograd\\) is not supported"):
        cls(params, lr=0.1, differentiable=True)
    if "capturable" in _flags(cls):
        with pytest.raises(ValueError, match=f"{name}: capturable=True .* is not supported by numdiff"):
            cls(params, lr=0.1, capturable=True)
    with pytest.raises(TypeError, match=f"{name}: foreach must be None, True or False, got 'yes'"):
        cls(params, lr=0.1, foreach="yes")
