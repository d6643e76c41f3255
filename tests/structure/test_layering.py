"""Layers import downwards only: the ground floor imports nothing of numdiff above it, and the kernel
packages import nothing from the op, autograd, tensor, module, optimizer, transform or compile layers."""

from __future__ import annotations

import pathlib

from tests.structure._source import PACKAGE, imports, source_files

ABOVE_KERNELS = tuple(
    f"numdiff.{layer}" for layer in ("ops", "autograd", "tensor", "nn", "optim", "func", "compile")
)


def _under(*folders: str) -> list[pathlib.Path]:
    roots = [PACKAGE.joinpath(*folder.split("/")) for folder in folders]
    return [p for p in source_files() if any(root in p.parents for root in roots)]


def _reaches(target: str, layers: tuple[str, ...]) -> bool:
    return any(target == layer or target.startswith(layer + ".") for layer in layers)


def upward_imports(files: list[pathlib.Path], allowed: tuple[str, ...]) -> list[str]:
    """`path:line -> target` for each import of a numdiff module outside the `allowed` prefixes."""
    return [
        f"{found.path}:{found.line} -> {target}"
        for path in files
        for found in imports(path)
        for target in found.targets
        if target != "numdiff" and not _reaches(target, allowed)
    ]


def test_ground_floor_imports_only_itself():
    files = _under("_ground")
    assert files, "numdiff/_ground holds the shared rules and geometry"
    assert upward_imports(files, ("numdiff._ground",)) == []


def test_kernel_packages_import_nothing_from_the_layers_above():
    files = _under("kernels", "cuda/kernels")
    found = [
        f"{hit.path}:{hit.line} -> {target}"
        for path in files
        for hit in imports(path)
        for target in hit.targets
        if _reaches(target, ABOVE_KERNELS)
    ]
    assert found == [], "kernels take arrays and sizes; move what they need to numdiff/_ground"


def test_the_scan_sees_an_upward_import():
    module = PACKAGE / "kernels" / "conv.py"
    hits = upward_imports([module], ("numdiff.kernels",))
    assert any("numdiff._ground.conv_geometry" in hit for hit in hits)
    assert upward_imports([module], ("numdiff.kernels", "numdiff._ground")) == []
