"""Write the notebooks from their reviewable sources, then execute them to store their outputs.

Each notebook is written as a plain Python file in notebooks/src/ ("percent" format: a line
``# %%`` starts a code cell, ``# %% [markdown]`` a markdown cell whose lines are ``# ``-commented),
so a review reads a normal diff. This script turns each source into ``notebooks/<name>.ipynb`` and
runs it top to bottom with nbclient, keeping the outputs so the notebooks read well on the web::

    python notebooks/_build.py                 # all notebooks, full sizes
    python notebooks/_build.py 01 --small      # one notebook, the small sizes CI uses
    python notebooks/_build.py --no-execute    # just regenerate the .ipynb files
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parent
SOURCES = NOTEBOOKS / "src"
REPO = NOTEBOOKS.parent
KERNEL = "python3"

_CODE = "# %%"
_MARKDOWN = "# %% [markdown]"


def cells_from_source(text: str) -> list[tuple[str, str]]:
    """Split a percent-format source into ``(kind, text)`` cells, kind "code" or "markdown"."""
    cells: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        stripped = line.rstrip()
        if stripped == _MARKDOWN:
            cells.append(("markdown", []))
        elif stripped == _CODE:
            cells.append(("code", []))
        elif cells:
            kind, lines = cells[-1]
            if kind == "markdown":
                if line.startswith("# "):
                    line = line[2:]
                elif stripped in ("#", ""):
                    line = ""
                else:
                    raise ValueError(f"markdown lines must start with '# ': {line!r}")
            lines.append(line)
        elif stripped:
            raise ValueError(f"text before the first '# %%' cell marker: {line!r}")
    result = []
    for kind, lines in cells:
        body = "\n".join(lines).strip("\n")
        if body:
            result.append((kind, body))
    return result


def notebook_from_source(path: Path) -> nbformat.NotebookNode:
    """A fresh, unexecuted notebook from one source file."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, body in cells_from_source(path.read_text(encoding="utf-8")):
        if kind == "markdown":
            nb.cells.append(nbformat.v4.new_markdown_cell(body))
        else:
            nb.cells.append(nbformat.v4.new_code_cell(body))
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index:03d}"  # stable ids: rebuilding does not churn the diff
    return nb


def ensure_kernel() -> None:
    """Register this interpreter's Jupyter kernel if none named python3 exists (a fresh machine)."""
    from jupyter_client.kernelspec import KernelSpecManager

    if KERNEL not in KernelSpecManager().find_kernel_specs():
        subprocess.run(
            [sys.executable, "-m", "ipykernel", "install", "--user", "--name", KERNEL],
            check=True,
            capture_output=True,
        )


def kernel_environment(small: bool) -> dict[str, str]:
    """The environment the notebook kernel runs in: numdiff importable, sizes chosen."""
    env = dict(os.environ)
    paths = [str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    if small:
        env["NUMDIFF_NOTEBOOK_SMALL"] = "1"
    else:
        env.pop("NUMDIFF_NOTEBOOK_SMALL", None)
    return env


def execute(nb: nbformat.NotebookNode, small: bool, timeout: int = 1800) -> nbformat.NotebookNode:
    """Run every cell in a fresh kernel whose working directory is notebooks/; raise on an error."""
    from nbclient import NotebookClient

    ensure_kernel()
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
        record_timing=False,
    )
    previous = dict(os.environ)
    os.environ.clear()
    os.environ.update(kernel_environment(small))
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(previous)
    return nb


def build(name: str, run: bool, small: bool) -> Path:
    matches = sorted(SOURCES.glob(f"{name}*.py"))
    if len(matches) != 1:
        raise SystemExit(f"{name!r} matches {[m.name for m in matches]} in {SOURCES}; be more precise")
    source = matches[0]
    nb = notebook_from_source(source)
    if run:
        start = time.perf_counter()
        execute(nb, small)
        nb.metadata["numdiff_build"] = {"small": small}  # the tests refuse to see CI sizes committed
        print(f"{source.stem}: executed in {time.perf_counter() - start:.0f} s")
    target = NOTEBOOKS / f"{source.stem}.ipynb"
    nbformat.write(nb, target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("names", nargs="*", help="notebook name prefixes, e.g. 01 (default: all)")
    parser.add_argument("--no-execute", action="store_true", help="write the notebooks without running them")
    parser.add_argument("--small", action="store_true", help="run with NUMDIFF_NOTEBOOK_SMALL=1")
    args = parser.parse_args()
    names = args.names or [p.stem for p in sorted(SOURCES.glob("[0-9]*.py"))]
    for name in names:
        print(build(name, run=not args.no_execute, small=args.small))


if __name__ == "__main__":
    main()
