"""Loading numdiff's kernels from Numba's disk cache skips the compiler's set-up.

A throwaway package's kernels are compiled into a temporary NUMBA_CACHE_DIR by one process; a
second process loads them. It must get the same results from the cached machine code (a parallel
loop, an allocation, a string hash: what the code links against is in place) without refreshing
Numba's typing and lowering registries (which import scipy.linalg), and a kernel compiled after
those loads must still compile. Defining a kernel must not touch the cache folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

_KERNELS = textwrap.dedent(
    """
    import numpy as np
    from numba import prange

    from numdiff.kernels._self_healing_cache import njit


    @njit(cache=True, parallel=True)
    def scaled_copy(x, factor):
        out = np.empty_like(x)
        for i in prange(x.shape[0]):
            out[i] = x[i] * factor
        return out


    @njit(cache=True)
    def name_hashes(names):
        seen = {}
        for name in names:
            seen[name] = hash(name)
        return len(seen)


    def never_cached(x):
        return x + 1.0
    """
)

_CALL = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from cachepkg import kernels
    from numba.core import entrypoints
    from numdiff.kernels._self_healing_cache import njit

    report = {
        "scaled": kernels.scaled_copy(np.arange(6.0), 2.5).tolist(),
        "hashes": kernels.name_hashes(("a", "bb", "a", "ccc")),
        "hits": sum(kernels.scaled_copy.stats.cache_hits.values()) + sum(kernels.name_hashes.stats.cache_hits.values()),
        "registries_loaded": "numba.np.arraymath" in sys.modules,
        "scipy_linalg": "scipy.linalg" in sys.modules,
        "extensions_scanned": entrypoints._already_initialized,
    }
    report["compiled_after"] = njit(kernels.never_cached)(1.0)
    print(json.dumps(report))
    """
)


def _run(tmp_path, code: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path / "src"), *sys.path]))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture
def package(tmp_path):
    folder = tmp_path / "src" / "cachepkg"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "kernels.py").write_text(_KERNELS)
    return tmp_path


def test_a_second_process_loads_cached_kernels_without_the_compiler_set_up(package):
    first = _run(package, _CALL)  # compiles both kernels and saves them
    assert first["hits"] == 0 and first["registries_loaded"]
    second = _run(package, _CALL)
    assert second["hits"] == 2
    assert second["scaled"] == first["scaled"] == [0.0, 2.5, 5.0, 7.5, 10.0, 12.5]
    assert second["hashes"] == first["hashes"] == 3
    assert second["compiled_after"] == 2.0  # the compiler sets itself up when it is needed


def test_loading_cached_kernels_imports_neither_registries_nor_scipy_linalg(package):
    load_only = _CALL.replace('report["compiled_after"] = njit(kernels.never_cached)(1.0)\n', "")
    _run(package, load_only)
    second = _run(package, load_only)
    assert second["hits"] == 2
    assert not second["registries_loaded"] and not second["scipy_linalg"]


def test_loading_cached_kernels_skips_the_numba_extension_scan(package):
    # The scan of every installed distribution's entry points waits for a compile, which a load is not.
    load_only = _CALL.replace('report["compiled_after"] = njit(kernels.never_cached)(1.0)\n', "")
    first = _run(package, load_only)
    assert first["extensions_scanned"]  # compiling scanned them
    second = _run(package, load_only)
    assert second["hits"] == 2 and not second["extensions_scanned"]
    assert second["scaled"] == first["scaled"]


def test_defining_a_kernel_leaves_the_cache_folder_alone(package):
    report = _run(package, "import json, os, sys\nfrom cachepkg import kernels\n"
                           "print(json.dumps({'made': os.path.exists(os.environ['NUMBA_CACHE_DIR'])}))")
    assert report == {"made": False}


def test_an_entry_saved_against_other_numdiff_kernels_modules_is_compiled_again(package):
    # A cached kernel holds its callees' machine code: an entry saved while numdiff.kernels' modules
    # were otherwise (another stamp) must not be loaded, and the one saved now must.
    other = "import numdiff.kernels._self_healing_cache as cache\ncache.kernels_stamp = lambda: 'another'\n"
    _run(package, _CALL)
    assert _run(package, _CALL)["hits"] == 2
    assert _run(package, other + _CALL)["hits"] == 0  # compiled again, and saved under that stamp
    assert _run(package, _CALL)["hits"] == 0  # so the real stamp compiles again too
    assert _run(package, _CALL)["hits"] == 2


def test_the_kernels_stamp_follows_each_modules_time_and_size(tmp_path, monkeypatch):
    from numdiff.kernels import _self_healing_cache as cache

    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("x = 1\n")
    monkeypatch.setattr(cache, "__file__", str(tmp_path / "a.py"))
    stamps = []
    for change in (None, lambda: os.utime(tmp_path / "b.py", ns=(1, 10**18)), lambda: (tmp_path / "a.py").write_text("x = 10\n")):
        if change is not None:
            change()
        cache.kernels_stamp.cache_clear()
        stamps.append(cache.kernels_stamp())
    cache.kernels_stamp.cache_clear()
    assert len(set(stamps)) == 3
