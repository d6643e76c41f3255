"""Every notebook runs top to bottom (small sizes) and matches its reviewable source in notebooks/src/."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = sorted(p.stem for p in (NOTEBOOKS / "src").glob("[0-9]*.py"))

# What each notebook needs from numdiff beyond the core. While another part of numdiff is still
# being written its notebook is skipped, naming what is missing; once it exists the notebook must
# run.
REQUIRES = {
    "01_leaf_tensors": [
        "nn.functional.linear",
        "nn.functional.conv2d",
        "nn.functional.max_pool2d",
        "optim.Adam",
    ],
    "02_train_cnn": ["nn.functional.conv2d", "optim.Adam", "utils.data.DataLoader", "save", "load"],
    "03_performance": ["matmul", "nn.functional.conv2d", "nn.functional.max_pool2d", "kernels.compile_all"],
    "04_cuda": ["nn.functional.conv2d", "optim.Adam"],
}


def _missing(name: str) -> list[str]:
    import importlib

    missing = []
    for path in REQUIRES.get(name, []):
        parts = path.split(".")
        obj = importlib.import_module("numdiff")
        for i, part in enumerate(parts):
            if not hasattr(obj, part):
                try:
                    obj = importlib.import_module("numdiff." + ".".join(parts[: i + 1]))
                    continue
                except ImportError:
                    missing.append("numdiff." + path)
                    break
            obj = getattr(obj, part)
    return missing


def _require(name: str) -> None:
    missing = _missing(name)
    if missing:
        pytest.skip(f"{name} needs {', '.join(missing)}, not in numdiff yet")


def _build_module():
    spec = importlib.util.spec_from_file_location("notebooks_build", NOTEBOOKS / "_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _build_module()


def test_every_source_has_a_committed_notebook():
    assert NAMES, "no notebook sources found"
    committed = sorted(p.stem for p in NOTEBOOKS.glob("[0-9]*.ipynb"))
    runnable = [name for name in NAMES if not _missing(name)]
    assert set(runnable) <= set(committed) <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_matches_its_source_and_has_outputs(name):
    _require(name)
    committed = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    fresh = build.notebook_from_source(NOTEBOOKS / "src" / f"{name}.py")
    assert [(c.cell_type, c.source) for c in committed.cells] == [
        (c.cell_type, c.source) for c in fresh.cells
    ], f"notebooks/{name}.ipynb is stale: run python notebooks/_build.py {name[:2]}"
    code = [c for c in committed.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), f"{name}.ipynb was saved unexecuted"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{name}.ipynb was saved with an error output: {errors[0].ename}"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes_without_error(name):
    _require(name)
    nb = build.notebook_from_source(NOTEBOOKS / "src" / f"{name}.py")
    build.execute(nb, small=True, timeout=600)  # raises CellExecutionError on the first failing cell
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


def test_percent_format_parser():
    text = "# %% [markdown]\n# # Title\n#\n# text\n\n# %%\nx = 1\n\n\n# %%\n\n# %%\ny = 2\n"
    assert build.cells_from_source(text) == [
        ("markdown", "# Title\n\ntext"),
        ("code", "x = 1"),
        ("code", "y = 2"),
    ]
    with pytest.raises(ValueError, match="before the first"):
        build.cells_from_source("x = 1\n# %%\n")
    with pytest.raises(ValueError, match="must start with"):
        build.cells_from_source("# %% [markdown]\nnot a comment\n")
