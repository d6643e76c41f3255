"""`import numdiff` loads no kernel: Numba, SciPy's LAPACK and numdiff.kernels' compiled modules load
when an op first needs them (issue 26's import goal), and then work as if imported up front."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

from numdiff._lazy import lazy_module

ROOT = Path(__file__).resolve().parents[2]

# Modules whose code must not run during `import numdiff`: each costs tens of milliseconds or more,
# or (numpy.random, fractions, string) several where the whole import is 0.1-0.2 s.
HEAVY = [
    "numba.core.dispatcher",
    "llvmlite.binding",
    "scipy.linalg._flapack",
    "numdiff.kernels.conv",
    "numdiff.kernels.avg_pool",
    "numdiff.kernels.matmul",
    "numdiff.kernels.elementwise",
    "numdiff.kernels._blas",
    "numdiff.kernels.class_loss",
    "numdiff.profiler._profile",
    "numpy.random",
    "fractions",
    "string",
]


def _loaded_after(code: str) -> dict[str, bool]:
    """Per HEAVY module, whether its code ran in a fresh interpreter after `code`."""
    probe = (
        "import json, sys, types\n"
        f"{code}\n"
        f"print(json.dumps({{m: type(sys.modules.get(m)) is types.ModuleType for m in {HEAVY!r}}}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_import_numdiff_runs_no_kernel_module():
    loaded = _loaded_after("import numdiff")
    assert not any(loaded.values()), f"imported by `import numdiff`: {[m for m, ran in loaded.items() if ran]}"


def test_first_draw_makes_the_default_generator():
    code = (
        "import pickle\n"
        "import numdiff\n"
        "fresh = pickle.loads(pickle.dumps(numdiff.Generator()))\n"
        "a = numdiff.randn(3)\n"
        "numdiff.manual_seed(5)\n"
        "b = numdiff.rand(4)\n"
        "numdiff.manual_seed(5)\n"
        "assert numdiff.equal(b, numdiff.rand(4)) and numdiff.default_generator.initial_seed() == 5\n"
        "assert fresh.initial_seed() is None and fresh._rng is not numdiff.default_generator._rng\n"
    )
    assert _loaded_after(code)["numpy.random"]


def test_first_op_loads_the_kernels_it_needs():
    code = (
        "import numdiff\n"
        "x = numdiff.ones(1, 1, 4, 4, requires_grad=True)\n"
        "w = numdiff.ones(1, 1, 3, 3)\n"
        "numdiff.nn.functional.conv2d(x, w).sum().backward()\n"
        "assert x.grad.sum().item() == 36.0\n"
        "numdiff.linalg.inv(numdiff.eye(40, dtype=numdiff.float64))\n"
    )
    loaded = _loaded_after(code)
    assert loaded["numdiff.kernels.conv"] and loaded["numba.core.dispatcher"]
    assert loaded["scipy.linalg._flapack"]


def test_lazy_module_runs_on_first_attribute_access(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    (tmp_path / "nd_lazy_probe.py").write_text(f"open({str(marker)!r}, 'w').close()\nVALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "nd_lazy_probe", raising=False)
    module = lazy_module("nd_lazy_probe")
    # Another package's module is a stand-in that imports it through the import system on first
    # use (never a placeholder in sys.modules, which confused numba's own imports).
    assert "nd_lazy_probe" not in sys.modules
    assert not marker.exists()
    assert module.VALUE == 42
    assert marker.exists()
    assert sys.modules["nd_lazy_probe"].VALUE == 42


def test_a_numdiff_module_becomes_an_ordinary_module_after_first_use():
    module = lazy_module("numdiff.kernels.avg_pool")
    assert module.__name__ == "numdiff.kernels.avg_pool"
    assert type(sys.modules["numdiff.kernels.avg_pool"]) is types.ModuleType  # no per-access cost


def test_lazy_module_returns_an_imported_module_as_it_is():
    assert lazy_module("json") is json


def test_lazy_module_names_a_missing_module_at_once():
    with pytest.raises(ModuleNotFoundError, match="numdiff.no_such_module"):
        lazy_module("numdiff.no_such_module")


def test_a_second_thread_waits_for_the_module_code(tmp_path, monkeypatch):
    # The module's code sleeps between its two assignments: a thread that read the module while the
    # first one ran it would find FIRST without LAST.
    (tmp_path / "nd_lazy_slow.py").write_text("import time\nFIRST = 1\ntime.sleep(0.2)\nLAST = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "nd_lazy_slow", raising=False)
    module = lazy_module("nd_lazy_slow")
    seen: list[object] = []

    def read() -> None:
        seen.append(getattr(module, "LAST", "half-run"))

    threads = [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [2, 2]


def test_another_packages_submodule_imports_its_parent_on_first_use(tmp_path, monkeypatch):
    package = tmp_path / "nd_lazy_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("PARENT_RAN = True\n")
    (package / "child.py").write_text("VALUE = 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("nd_lazy_pkg", "nd_lazy_pkg.child"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    child = lazy_module("nd_lazy_pkg.child")
    assert "nd_lazy_pkg" not in sys.modules  # nothing of another package runs before first use
    assert child.VALUE == 7
    import nd_lazy_pkg  # imported whole by the first use, the child bound as the import system binds it

    assert nd_lazy_pkg.child is sys.modules["nd_lazy_pkg.child"] and nd_lazy_pkg.PARENT_RAN
