"""`import numdiff` loads the core only (tensor, creation, ops, autograd): numba, scipy and the
subpackages beyond the core load on first access, through numdiff's PEP 562 ``__getattr__`` and
the table in numdiff/_deferred.py (issue 26's import goal). These tests keep that from regressing
silently, and check that the deferred names are the ones the eager import used to bind."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import numdiff
from numdiff import _deferred

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> str:
    """The last line `code` prints in a fresh interpreter started in the checkout."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


def _ran_after(code: str, modules: list[str]) -> list[str]:
    """The modules of `modules` whose code ran in a fresh interpreter after `code` (a module that
    numdiff._lazy bound but did not run yet does not count)."""
    probe = f"import json, sys, types\n{code}\n" + (
        f"print(json.dumps([m for m in {modules!r} if type(sys.modules.get(m)) is types.ModuleType]))"
    )
    return json.loads(_run(probe))


DEFERRED = ["numba", "scipy", "numdiff.func", "numdiff.nn", "numdiff.nn.functional", "numdiff.optim",
            "numdiff.compile", "numdiff.fx", "numdiff.onnx", "numdiff.utils", "numdiff.utils.data",
            "numdiff.serialization", "numdiff.hub", "numdiff.viz", "numdiff.distributions",
            "numdiff.distributed", "numdiff.testing", "numdiff.jit", "numdiff.benchmark",
            "numdiff.safetensors", "numdiff.profiler", "numdiff._elementwise", "numdiff.sparse",
            "numdiff.ops.sparse"]  # fmt: skip


def test_import_numdiff_loads_no_deferred_package():
    assert _ran_after("import numdiff", DEFERRED) == []


def test_deferred_table_names_every_subpackage_this_test_checks():
    # A subpackage added to the table is checked above; one taken out of it must leave DEFERRED too.
    assert {f"numdiff.{name}" for name in _deferred.SUBMODULES} <= set(DEFERRED)


def test_first_access_loads_the_subpackage_and_its_names():
    code = (
        "import numdiff\n"
        "assert numdiff.nn.Linear(2, 3).weight.shape == (3, 2)\n"
        "from numdiff import fx\n"
        "import numdiff.onnx\n"
        "assert numdiff.conv2d is numdiff.nn.functional.conv2d\n"
        "assert callable(numdiff.vmap) and callable(numdiff.save)\n"
    )
    assert _ran_after(code, ["numdiff.nn", "numdiff.fx", "numdiff.onnx", "numdiff.func", "numdiff.serialization"]) == [
        "numdiff.nn", "numdiff.fx", "numdiff.onnx", "numdiff.func", "numdiff.serialization",
    ]  # fmt: skip


def test_compile_stays_the_function_when_its_subpackage_loads_first():
    # The import system binds a newly loaded subpackage on its parent: numdiff.compile (the package)
    # loaded by an attention layer or an import must not replace numdiff.compile (the function).
    code = (
        "import numdiff\n"
        "import numdiff.compile.trace\n"
        "from numdiff.compile import compile as function\n"
        "print(numdiff.compile is function)\n"
    )
    assert _run(code) == "True"


def test_deferred_names_are_the_attributes_of_their_modules():
    for name, module in _deferred.ATTRIBUTES.items():
        assert getattr(numdiff, name) is getattr(importlib.import_module(module), name), name
    for name in _deferred.SUBMODULES:
        assert getattr(numdiff, name) is importlib.import_module(f"numdiff.{name}"), name


def test_nn_top_level_names_are_those_of_nn_toplevel_the_core_lacks():
    from numdiff.nn._toplevel import FUNCTIONS

    core = set(vars(numdiff)) - _deferred.NAMES
    assert sorted(set(FUNCTIONS) - core) == sorted(_deferred.NN_FUNCTIONS)
    for name in _deferred.NN_FUNCTIONS:
        assert getattr(numdiff, name) is FUNCTIONS[name], name


def test_every_deferred_name_is_public():
    assert _deferred.NAMES <= set(numdiff.__all__)
    assert _deferred.NAMES <= set(dir(numdiff))


def test_an_unknown_name_raises_attribute_error_naming_it():
    try:
        numdiff.no_such_name  # noqa: B018
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("numdiff.no_such_name did not raise")


def test_import_leaves_torch_alone():
    assert json.loads(_run("import json, sys, numdiff; print(json.dumps('torch' in sys.modules))")) is False
