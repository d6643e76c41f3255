"""Generated kernels (numdiff.kernels._kernel_files) are cached per copy of numdiff.

A cache entry holds machine code compiled against one copy's numdiff.kernels files, and Numba keeps
one stamp per index file. When two copies (two clones, two virtual environments of different
versions) shared one folder of generated modules, each copy's process rewrote the index of a kernel
the other had saved, and both recompiled it in every process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numdiff
from numdiff.kernels import _kernel_files

_PACKAGE = Path(numdiff.__file__).parent

# Runs one generated kernel (relu's forward loop) and reports whether it came from the disk cache.
_CHILD = r"""
import json, numpy as np
from numdiff._ground.scalar_rules import RULES
from numdiff.kernels import _kernel_files, elementwise
out = elementwise.forward_contiguous(RULES["relu"], np.array([-1.0, 2.0, -3.0]), ())
assert out.tolist() == [0.0, 2.0, 0.0], out
(kernel,) = [k for key, k in elementwise.KERNELS.items() if key[0] == "relu"]
print(json.dumps({"hits": sum(kernel.stats.cache_hits.values()), "misses": sum(kernel.stats.cache_misses.values()),
                  "folder": str(_kernel_files.generated_dir())}))
"""


def test_each_copy_of_numdiff_has_its_own_folder():
    key = _kernel_files.install_key
    assert key(Path("/a/numdiff/kernels")) != key(Path("/b/numdiff/kernels"))
    assert key(_PACKAGE / "kernels") == key(_PACKAGE / "kernels" / ".." / "kernels")  # one folder, one key
    assert _kernel_files.generated_dir().name == key(_PACKAGE / "kernels")


def _copy_of_numdiff(root: Path, edited: bool) -> Path:
    shutil.copytree(_PACKAGE, root / "numdiff", ignore=shutil.ignore_patterns("__pycache__"))
    if edited:  # another version: a kernels module relu's loop does not read differs, so the stamps differ
        with open(root / "numdiff" / "kernels" / "_checks.py", "a") as file:
            file.write("\n# another version\n")
    return root


def _run(copy: Path, cache: Path) -> dict:
    environment = {**os.environ, "PYTHONPATH": str(copy), "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", _CHILD], env=environment, cwd=copy, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_two_copies_sharing_a_cache_folder_keep_each_others_generated_kernels(tmp_path):
    first = _copy_of_numdiff(tmp_path / "first", edited=False)
    second = _copy_of_numdiff(tmp_path / "second", edited=True)
    cache = tmp_path / "numba_cache"
    built = _run(first, cache)
    other = _run(second, cache)
    again = _run(first, cache)
    assert built["misses"] == 1 and other["misses"] == 1
    assert (again["hits"], again["misses"]) == (1, 0)  # loaded: the second copy left its entry alone
    assert built["folder"] != other["folder"] and again["folder"] == built["folder"]
