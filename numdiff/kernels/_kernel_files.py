"""Where generated kernel source lives: each module written to its own file under
`generated_dir()` and imported from there (numdiff.kernels._codegen makes the source), and
derived texts stored next to it behind a checksum line.

Numba caches a function on disk only if it was defined in a file (``cache=True`` needs a source
file to key the cache on). ``$NUMBA_CACHE_DIR/numdiff_generated``, else
``~/.cache/numdiff/generated``, else a per-user temporary folder when the home is read-only; in it,
one folder per copy of numdiff (`install_key`). A cache entry is valid only for the numdiff.kernels
files it was compiled against (numdiff.kernels._self_healing_cache.kernels_stamp), and Numba keeps one
stamp per index file: two copies (two clones, two virtual environments) writing one generated file's
index replaced each other's entries, so each recompiled the kernel in every process (relu's forward:
0.26 s CPU of a warm first CNN step of 0.7 s). Numba's own cache is per source path the same way.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType

__all__ = ["generated_dir", "install_key", "load_source", "read_checked", "write_checked"]

_loaded: dict[str, ModuleType] = {}
_directory: Path | None = None
# Two threads asking for one new kernel at once would both write and import its module, and the
# second would replace the first's sys.modules entry while the first still compiles from it.
_load_lock = threading.RLock()


def install_key(package_folder: Path) -> str:
    """The name of the generated-kernel folder of the numdiff whose numdiff.kernels is
    `package_folder`: a hash of its resolved path, so each copy of numdiff has its own.

    >>> install_key(Path("/a/numdiff/kernels")) == install_key(Path("/b/numdiff/kernels"))
    False
    """
    return hashlib.sha256(str(package_folder.resolve()).encode()).hexdigest()[:16]


def generated_dir() -> Path:
    """The folder generated kernel modules are written to (created on first use)."""
    global _directory
    if _directory is None:
        numba_cache = os.environ.get("NUMBA_CACHE_DIR")
        if numba_cache:
            base = Path(numba_cache)
        else:
            base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "numdiff"
        copy = install_key(Path(__file__).parent)
        candidate = (base / "numdiff_generated" if numba_cache else base / "generated") / copy
        try:
            candidate.mkdir(parents=True, exist_ok=True)
            if not os.access(candidate, os.W_OK):
                raise PermissionError(candidate)
        except OSError:
            # A read-only home still works: the kernels then compile per process.
            candidate = Path(tempfile.gettempdir()) / f"numdiff_generated_{os.getuid()}" / copy
            candidate.mkdir(parents=True, exist_ok=True)
        _directory = candidate
    return _directory


def load_source(stem: str, source: str) -> ModuleType:
    """Import `source` as a module from a file named after `stem` and the source's hash."""
    # Numba's cache records the module name and imports it on load, so the name is hashed with the
    # source: a cache entry never meets a module registered under another name.
    package = "numdiff.kernels._generated"  # listed by numdiff.jit.compiled_kernels under this name
    digest = hashlib.sha256(f"{package}\n{source}".encode()).hexdigest()[:16]
    name = f"{package}.{stem}_{digest}"
    module = _loaded.get(name)
    if module is not None:
        return module
    with _load_lock:
        module = _loaded.get(name)
        if module is None:
            module = _load_file(name, stem, digest, source)
            _loaded[name] = module
    return module


def _load_file(name: str, stem: str, digest: str, source: str) -> ModuleType:
    """Write `source` to its file unless the file holds it already, and import it as `name`."""
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
    return module


def read_checked(path: Path) -> str | None:
    """The text stored at `path` by `write_checked`, or None if absent or damaged."""
    try:
        stored = path.read_text()
    except (OSError, UnicodeDecodeError):
        return None
    digest, _, text = stored.partition("\n")
    return text if digest == "# " + hashlib.sha256(text.encode()).hexdigest() else None


def write_checked(path: Path, text: str) -> None:
    """Store `text` at `path` behind a line with its hash, atomically; a failure only costs a rewrite."""
    try:
        path.parent.mkdir(exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        with os.fdopen(handle, "w") as file:
            file.write("# " + hashlib.sha256(text.encode()).hexdigest() + "\n" + text)
        os.replace(temporary, path)
    except OSError:
        pass
