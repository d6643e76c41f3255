"""dir() of every public module shows its public names, exactly its explicit __all__, and every name
in __all__ resolves: no leaked imports (Any, Tensor, math, np) in tab completion."""

from __future__ import annotations

import importlib

import pytest

PUBLIC_MODULES = [
    "numdiff", "numdiff.nn", "numdiff.nn.functional", "numdiff.nn.init", "numdiff.nn.utils", "numdiff.optim",
    "numdiff.optim.lr_scheduler", "numdiff.autograd", "numdiff.autograd.functional", "numdiff.func",
    "numdiff.linalg", "numdiff.special", "numdiff.utils", "numdiff.utils.data", "numdiff.utils.dlpack",
    "numdiff.distributions", "numdiff.distributions.constraints", "numdiff.compile", "numdiff.cuda",
    "numdiff.profiler", "numdiff.safetensors", "numdiff.onnx", "numdiff.jit", "numdiff.viz", "numdiff.benchmark",
    "numdiff.accelerator", "numdiff.distributed",
]  # fmt: skip


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_dir_shows_exactly_the_explicit_all(name):
    module = importlib.import_module(name)
    assert isinstance(module.__all__, list) and len(set(module.__all__)) == len(module.__all__), "duplicates in __all__"
    public = [n for n in dir(module) if not n.startswith("_")]
    assert public == sorted(module.__all__)
    unresolved = [n for n in module.__all__ if not hasattr(module, n)]
    assert not unresolved, f"{name}.__all__ names what the module lacks: {unresolved}"


def test_the_imports_a_module_uses_stay_reachable_but_out_of_sight():
    import numdiff.special

    assert "math" not in dir(numdiff.special) and "Tensor" not in dir(numdiff.special)
    assert "linalg" in dir(__import__("numdiff")) and "load" in dir(__import__("numdiff"))
