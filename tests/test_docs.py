"""The documentation site: every public name has a docstring to render, and `mkdocs build --strict` passes."""

from __future__ import annotations

import importlib
import inspect
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = [
    "numdiff", "numdiff.nn", "numdiff.nn.functional", "numdiff.optim", "numdiff.optim.lr_scheduler",
    "numdiff.autograd", "numdiff.func", "numdiff.linalg", "numdiff.special", "numdiff.utils.data",
    "numdiff.distributions", "numdiff.compile", "numdiff.safetensors", "numdiff.utils.dlpack", "numdiff.profiler",
    "numdiff.fx", "numdiff.overrides",
]  # fmt: skip


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_function_and_class_has_a_docstring(module_name):
    module = importlib.import_module(module_name)
    missing = [
        name for name in module.__all__
        if (inspect.isroutine(getattr(module, name)) or inspect.isclass(getattr(module, name)))
        and not (inspect.getdoc(getattr(module, name)) or "").strip()
    ]  # fmt: skip
    assert not missing, f"{module_name}: public names without a docstring: {missing}"


def test_every_api_module_has_a_page():
    pages = "\n".join(p.read_text() for p in (ROOT / "docs" / "api").glob("*.md"))
    for module_name in MODULES:
        if module_name not in ("numdiff.optim.lr_scheduler",):
            assert f"::: {module_name}" in pages, f"{module_name} has no API page in docs/api"


@pytest.mark.skipif(shutil.which("mkdocs") is None and importlib.util.find_spec("mkdocs") is None,
                    reason="pip install -e '.[docs]'")
def test_the_site_builds_in_strict_mode(tmp_path):
    pytest.importorskip("mkdocstrings")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=1200,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "nn" / "index.html").exists()
