"""The hand-kept export lists agree with what the packages hold: every layer numdiff.nn and
numdiff.nn.modules import is in their __all__, and __all__ names nothing else (besides nn's
Parameter and submodules). The lists stay explicit so that ruff sees the re-exports."""

from __future__ import annotations

import numdiff.nn as nn
import numdiff.nn.modules as modules
from numdiff.nn.modules.module import Module


def _layers(package) -> set[str]:
    return {
        name for name, value in vars(package).items()
        if not name.startswith("_") and isinstance(value, type) and issubclass(value, Module)
    }  # fmt: skip


def test_nn_modules_all_lists_exactly_its_layers():
    assert len(modules.__all__) == len(set(modules.__all__)), "a name listed twice"
    assert set(modules.__all__) == _layers(modules)


def test_nn_all_lists_its_layers_parameter_and_submodules():
    assert len(nn.__all__) == len(set(nn.__all__)), "a name listed twice"
    assert set(nn.__all__) == _layers(nn) | {
        "Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter", "functional", "init", "parallel", "utils"
    }


def test_every_name_in_all_resolves():
    for package in (nn, modules):
        missing = [name for name in package.__all__ if not hasattr(package, name)]
        assert missing == [], f"{package.__name__}.__all__ names {missing}"
