"""Generated kernel source: scalar expressions to loop bodies, written to files and imported.

Numba caches a function on disk only if it was defined in a file (``cache=True`` needs a source
file to key the cache on), so each generated kernel is written to its own module under
`generated_dir()` (``$NUMBA_CACHE_DIR/numdiff_generated``, else ``~/.cache/numdiff/generated``)
and imported from there. The file name holds a hash of the source, so a changed rule gets a new
file and never a stale cache; an existing file is used only if its text is exactly the source.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from numdiff.ops.scalar_rules import ScalarRule, vjp_expression

_loaded: dict[str, ModuleType] = {}
_directory: Path | None = None


def generated_dir() -> Path:
    """The folder generated kernel modules are written to (created on first use)."""
    global _directory
    if _directory is None:
        numba_cache = os.environ.get("NUMBA_CACHE_DIR")
        if numba_cache:
            base = Path(numba_cache)
        else:
            base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "numdiff"
        candidate = base / "numdiff_generated" if numba_cache else base / "generated"
        try:
            candidate.mkdir(parents=True, exist_ok=True)
            if not os.access(candidate, os.W_OK):
                raise PermissionError(candidate)
        except OSError:
            # A read-only home still works: the kernels then compile per process.
            candidate = Path(tempfile.gettempdir()) / f"numdiff_generated_{os.getuid()}"
            candidate.mkdir(parents=True, exist_ok=True)
        _directory = candidate
    return _directory


def load_source(stem: str, source: str) -> ModuleType:
    """Import `source` as a module from a file named after `stem` and the source's hash."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    name = f"numdiff_generated.{stem}_{digest}"
    module = _loaded.get(name)
    if module is not None:
        return module
    path = generated_dir() / f"{stem}_{digest}.py"
    try:
        current = path.read_text()
    except OSError:
        current = None
    if current != source:
        # Written under a temporary name and renamed, so a concurrent process never imports half a file.
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        with os.fdopen(handle, "w") as file:
            file.write(source)
        os.replace(temporary, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _loaded[name] = module
    return module


class _Substitute(ast.NodeTransformer):
    """Rewrite an expression for a kernel body: variables to array reads, where() to `a if c else b`."""

    def __init__(self, reads: dict[str, str], math_module: str) -> None:
        self.reads = reads
        self.math_module = math_module

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.reads:
            return ast.parse(self.reads[node.id], mode="eval").body
        if node.id == "math":
            return ast.Name(self.math_module, ast.Load())
        return node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "where":
            condition, a, b = node.args
            return ast.IfExp(condition, a, b)
        return node


def scalar_code(expression: str, reads: dict[str, str], math_module: str = "math") -> str:
    """`expression` with each variable replaced by its read (``{"x": "a_x[i]"}``), as source."""
    tree = _Substitute(reads, math_module).visit(ast.parse(expression, mode="eval"))
    return ast.unparse(ast.fix_missing_locations(tree))


def vjp_expressions(rule: ScalarRule, needed: tuple[int, ...]) -> list[str]:
    """The gradient expressions (in ``g``, the inputs, ``out``, attrs) of the inputs in `needed`."""
    return [vjp_expression(rule, index, "g") for index in needed]


def backward_reads(rule: ScalarRule, needed: tuple[int, ...]) -> tuple[str, ...]:
    """The operands a backward kernel reads: ``g`` and the saved values its expressions use."""
    used = set()
    for expression in vjp_expressions(rule, needed):
        tree = ast.parse(expression, mode="eval")
        used |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return tuple(name for name in ("g", *rule.saved) if name in used)
