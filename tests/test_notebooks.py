"""Every notebook runs top to bottom (small sizes) and matches its reviewable source in notebooks/src/.

Nothing here is skipped: the notebooks use only numdiff, the dev and examples extras and
(for 04) numba-cuda, whose simulator stands in for a GPU, so a failing cell fails the test.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = sorted(p.stem for p in (NOTEBOOKS / "src").glob("[0-9]*.py"))


def _build_module():
    spec = importlib.util.spec_from_file_location("notebooks_build", NOTEBOOKS / "_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _build_module()


def test_every_source_has_a_committed_notebook():
    assert NAMES, "no notebook sources found"
    committed = sorted(p.stem for p in NOTEBOOKS.glob("[0-9]*.ipynb"))
    assert committed == NAMES, "build the missing notebooks (python notebooks/_build.py), delete stale ones"


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_matches_its_source_and_has_outputs(name):
    committed = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    fresh = build.notebook_from_source(NOTEBOOKS / "src" / f"{name}.py")
    assert [(c.cell_type, c.source) for c in committed.cells] == [
        (c.cell_type, c.source) for c in fresh.cells
    ], f"notebooks/{name}.ipynb is stale: run python notebooks/_build.py {name[:2]}"
    code = [c for c in committed.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), f"{name}.ipynb was saved unexecuted"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{name}.ipynb was saved with an error output: {errors[0].ename}"
    assert committed.metadata.get("numdiff_build") == {"small": False}, (
        f"{name}.ipynb holds the outputs of a --small run: run python notebooks/_build.py {name[:2]}"
    )


@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes_without_error(name):
    nb = build.notebook_from_source(NOTEBOOKS / "src" / f"{name}.py")
    build.execute(nb, small=True, timeout=600)  # raises CellExecutionError on the first failing cell
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


def test_a_failing_cell_fails_the_execution():
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("raise ValueError('boom')")]
    with pytest.raises(CellExecutionError, match="boom"):
        build.execute(nb, small=True, timeout=60)


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
