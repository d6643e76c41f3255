"""The public surface does not shrink: every public name recorded in public_surface.json still exists.

New names are allowed (the test prints them, so the snapshot can be updated on purpose). To record
the surface after a deliberate change: `python3 -m tests.structure.test_public_surface`.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import types

import pytest

import numdiff

SNAPSHOT = pathlib.Path(__file__).with_name("public_surface.json")

# What the snapshot covers: a module, or a class reached from one ("numdiff:Tensor").
SURFACES = (
    "numdiff",
    "numdiff:Tensor",
    "numdiff.nn",
    "numdiff.nn.functional",
    "numdiff.optim",
    "numdiff.func",
    "numdiff.fx",
    "numdiff.overrides",
    "numdiff.autograd",
    "numdiff.linalg",
    "numdiff.special",
    "numdiff.utils.data",
)


def _resolve(surface: str) -> object:
    module_name, _, attribute = surface.partition(":")
    obj = importlib.import_module(module_name)
    return getattr(obj, attribute) if attribute else obj


def _defined_in(value: object, package: str) -> bool:
    """Whether `value` (a module, or an object with __module__) belongs to module `package` or below."""
    home = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
    return isinstance(home, str) and (home == package or home.startswith(package + "."))


def public_names(surface: str) -> list[str]:
    """The names `dir()` lists for a surface, less those starting with an underscore. For a module,
    names it merely imported for its own use (``math``, ``Any``, another package's helper) are left
    out: a public name is in its ``__all__`` or defined in the module or below it."""
    obj = _resolve(surface)
    # hasattr, not dir alone: a module's __dir__ may list a name it no longer has.
    names = [name for name in dir(obj) if not name.startswith("_") and hasattr(obj, name)]
    if not isinstance(obj, types.ModuleType):
        return sorted(names)
    exported = set(getattr(obj, "__all__", ()))
    return sorted(n for n in names if n in exported or _defined_in(getattr(obj, n), obj.__name__))


def missing_names(surface: str, recorded: list[str]) -> list[str]:
    """Recorded names the surface no longer has. A submodule counts as present while it imports:
    whether `numdiff.kernels` shows in `dir(numdiff)` depends on what was imported before."""
    now = set(public_names(surface))
    missing = []
    for name in sorted(set(recorded) - now):
        if ":" not in surface:
            try:
                importlib.import_module(f"{surface}.{name}")
                continue
            except ImportError:
                pass
        missing.append(name)
    return missing


def record() -> None:
    """Write the current public surface to the snapshot file."""
    snapshot = {surface: public_names(surface) for surface in SURFACES}
    SNAPSHOT.write_text(json.dumps(snapshot, indent=1) + "\n", encoding="utf-8")


def _recorded() -> dict[str, list[str]]:
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def test_snapshot_covers_every_surface():
    assert sorted(_recorded()) == sorted(SURFACES)


@pytest.mark.parametrize("surface", SURFACES)
def test_no_public_name_disappears(surface):
    recorded = set(_recorded()[surface])
    now = set(public_names(surface))
    added = sorted(now - recorded)
    if added:
        print(f"{surface}: new public names not yet in {SNAPSHOT.name}: {', '.join(added)}")
    missing = missing_names(surface, sorted(recorded))
    assert not missing, (
        f"{surface} lost public names {missing}; keep them (an alias is enough), or, if the removal is "
        f"deliberate, record the surface again with `python3 -m tests.structure.test_public_surface`"
    )


def test_the_check_sees_a_lost_name(monkeypatch):
    """The comparison is against the live module: a name taken away is reported as missing."""
    monkeypatch.delattr(numdiff, "zeros_like")
    assert missing_names("numdiff", _recorded()["numdiff"]) == ["zeros_like"]


if __name__ == "__main__":
    record()
