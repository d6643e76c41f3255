"""Imports stay few and acyclic enough to read: at most 60 imports of numdiff modules inside functions
(each one hides a dependency from the module's header), and no import cycle among modules of more
than 6 (package __init__ facades aside), as in the architecture issue's goals."""

from __future__ import annotations

import sys

from tests.structure._source import imports, module_name, relative, source_files

MOST_DEFERRED = 60
LARGEST_CYCLE = 6


def deferred_imports() -> list[str]:
    """`path:line` of each function-level import of a numdiff module."""
    return [f"{hit.path}:{hit.line}" for path in source_files() for hit in imports(path) if hit.in_function]


def module_graph() -> dict[str, set[str]]:
    """Module-level imports between numdiff modules; a package's __init__ is left out."""
    files = {module_name(path): path for path in source_files()}
    facades = {name for name, path in files.items() if path.name == "__init__.py"}
    graph: dict[str, set[str]] = {name: set() for name in files if name not in facades}
    for name in graph:
        for hit in imports(files[name]):
            if hit.in_function:
                continue
            for target in hit.targets:
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target and target != name and target not in facades:
                    graph[name].add(target)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of `graph`."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            components.append(component)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in graph:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return components


def test_few_imports_inside_functions():
    found = deferred_imports()
    assert len(found) <= MOST_DEFERRED, (
        f"{len(found)} imports of numdiff modules inside functions (at most {MOST_DEFERRED}): import at "
        f"module level, or break the cycle by moving the shared piece down a layer. {found}"
    )


def test_no_large_import_cycle():
    largest = max(strongly_connected(module_graph()), key=len)
    assert len(largest) <= LARGEST_CYCLE, f"an import cycle of {len(largest)} modules: {sorted(largest)}"


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    components = sorted(sorted(c) for c in strongly_connected(graph))
    assert components == [["a", "b", "c"], ["d"]]


def test_the_counts_cover_the_package():
    assert any(name.endswith("numdiff/backend.py") for name in map(relative, source_files()))
    assert len(module_graph()) > 100
