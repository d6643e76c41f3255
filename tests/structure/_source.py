"""numdiff's own modules read as source (ast; nothing imported), for the structure tests."""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "numdiff"


@dataclass(frozen=True)
class Import:
    """One import statement of a numdiff module that names numdiff modules."""

    path: str  # relative to the checkout, with "/" separators
    line: int
    targets: tuple[str, ...]  # absolute dotted names the statement names (numdiff.* only)
    in_function: bool


def module_name(path: pathlib.Path) -> str:
    """`numdiff/ops/conv.py` -> `numdiff.ops.conv`; a package's __init__ -> the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files() -> list[pathlib.Path]:
    """Every .py file of the numdiff package, sorted."""
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def relative(path: pathlib.Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _targets(path: pathlib.Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module_name(path).split(".")
            if path.name != "__init__.py":
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [prefix] + [f"{prefix}.{alias.name}" for alias in node.names]
    return [n for n in names if n == "numdiff" or n.startswith("numdiff.")]


def _walk(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        yield child, in_function
        nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from _walk(child, nested)


def imports(path: pathlib.Path) -> Iterator[Import]:
    """The import statements of one file that name numdiff modules."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node, in_function in _walk(tree, False):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            targets = _targets(path, node)
            if targets:
                yield Import(relative(path), node.lineno, tuple(targets), in_function)
