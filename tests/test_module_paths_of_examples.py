"""Module paths and wrappers that pytorch/examples import (imagenet, fx, super_resolution):
torch.nn.modules.* submodules, torch.nn.modules.utils' tuple helpers, torch.autograd.profiler,
and nn.DataParallel's state_dict prefix."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn

PATHS = {
    "batchnorm": ["BatchNorm1d", "BatchNorm2d", "SyncBatchNorm", "_BatchNorm"],
    "instancenorm": ["InstanceNorm1d", "InstanceNorm2d", "_InstanceNorm"],
    "pixelshuffle": ["PixelShuffle", "PixelUnshuffle"],
    "upsampling": ["Upsample", "UpsamplingNearest2d"],
    "flatten": ["Flatten", "Unflatten"],
    "fold": ["Fold", "Unfold"],
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_nn_modules_paths_hold_the_same_classes_as_nn(path):
    module = importlib.import_module(f"numdiff.nn.modules.{path}")
    for name in PATHS[path]:
        expected = getattr(nn, name, None) or getattr(importlib.import_module("numdiff.nn.modules.normalization"), name)
        assert getattr(module, name) is expected


def test_tuple_helpers_match_pytorchs():
    torch_utils = pytest.importorskip("torch.nn.modules.utils")
    from numdiff.nn.modules import utils

    for name, value in [("_single", 3), ("_pair", 3), ("_pair", (1, 2)), ("_triple", 2), ("_quadruple", [1, 2, 3, 4])]:
        assert getattr(utils, name)(value) == getattr(torch_utils, name)(value)
    assert utils._reverse_repeat_tuple((1, 2), 2) == torch_utils._reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)


def test_autograd_profiler_records_ranges_and_does_nothing_when_disabled():
    with numdiff.autograd.profiler.profile() as prof:
        with numdiff.autograd.profiler.record_function("my_step"):
            numdiff.ones(3).exp().sum()
    assert "my_step" in [event.name for event in prof.function_events]
    assert "my_step" in prof.key_averages().table()
    with numdiff.autograd.profiler.profile(enabled=False, use_cuda=False) as idle:
        numdiff.ones(3).exp()
    assert len(idle.function_events) == 0


def test_data_parallel_keeps_pytorchs_state_dict_prefix():
    numdiff.manual_seed(0)
    inner = nn.Linear(3, 2)
    model = nn.DataParallel(inner)
    x = numdiff.randn(4, 3)
    np.testing.assert_array_equal(model(x).detach().numpy(), inner(x).detach().numpy())
    assert sorted(model.state_dict()) == ["module.bias", "module.weight"]
