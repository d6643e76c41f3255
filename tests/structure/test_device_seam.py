"""One device seam: outside numdiff/backend.py and the kernel packages, no code tests whether an array is
NumPy's (`type(x) is np.ndarray`, `isinstance(x, np.ndarray)`) or calls a device array's own copy
methods (`x.to_host()`, `x.from_host(host)`); it asks numdiff.backend (`is_host`, `to_host`,
`like_host`, `is_numpy`, `backend_for(x).<launcher>`)."""

from __future__ import annotations

import ast

from tests.structure._source import PACKAGE, relative, source_files

SEAM = ("numdiff/backend.py", "numdiff/kernels/", "numdiff/cuda/")


def _is_ndarray(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "ndarray"
        and isinstance(node.value, ast.Name)
        and node.value.id in ("np", "numpy")
    )


def _type_tests(node: ast.AST) -> list[ast.AST]:
    """The expressions that `node` tests an array's type against, if it is a type test."""
    if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) for op in node.ops):
        return [node.left, *node.comparators]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass"):
        if len(node.args) == 2:
            kinds = node.args[1]
            return list(kinds.elts) if isinstance(kinds, ast.Tuple) else [kinds]
    return []


def _device_method_call(node: ast.AST) -> bool:
    """A device array's own copy methods: CudaArray.to_host() and CudaArray.from_host(host) (the
    backend's methods of the same names take the array as well: to_host(a), from_host(host, like))."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    arguments = len(node.args) + len(node.keywords)
    return (node.func.attr == "to_host" and arguments == 0) or (node.func.attr == "from_host" and arguments == 1)


def seam_violations(source: str, name: str) -> list[str]:
    """`name:line` of each array-type test or device copy method call in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if any(_is_ndarray(tested) for tested in _type_tests(node)) or _device_method_call(node):
            found.append(f"{name}:{node.lineno}")
    return found


def test_no_array_type_branch_outside_the_seam():
    found = []
    for path in source_files():
        name = relative(path)
        if not name.startswith(SEAM):
            found += seam_violations(path.read_text(encoding="utf-8"), name)
    assert found == [], (
        "ask numdiff.backend instead of testing the array type or calling a device array's copy "
        f"methods (is_host, to_host, like_host, is_numpy, backend_for): {found}"
    )


def test_the_scan_sees_each_form_of_branch():
    branches = [
        "type(x) is np.ndarray",
        "type(x) is not numpy.ndarray",
        "isinstance(x, np.ndarray)",
        "isinstance(x, (list, np.ndarray))",
        "x.to_host()",
        "x.from_host(host)",
    ]
    for branch in branches:
        assert seam_violations(branch, "f") == ["f:1"], branch
    allowed = ["def f(x: np.ndarray) -> np.ndarray: ...", "to_host(x)", "backend_for(x).from_host(h, x)"]
    for code in allowed:
        assert seam_violations(code, "f") == [], code


def test_the_seam_itself_is_scanned_as_allowed():
    backend = (PACKAGE / "backend.py").read_text(encoding="utf-8")
    assert seam_violations(backend, "backend") != []  # where the one question is answered
