"""numdiff's Numba disk cache repairs itself: damaged .nbi/.nbc files are dropped, recompiled, warned about once.

The damage is real: a throwaway package's kernels are compiled into a temporary NUMBA_CACHE_DIR
by one process, their cache files are truncated or garbled here, and a second process calls
them. The same kernels built with plain numba.njit show that each damage breaks Numba itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from numdiff import jit
from numdiff.kernels._self_healing_cache import SelfHealingCache

_DAMAGES = ("index_truncated", "index_garbled", "data_truncated", "data_garbled", "data_byte_flipped")

_KERNELS = "\n".join(
    f"@njit(cache=True)\ndef {name}(x):\n    return x * {factor}.0 + 1.0\n"
    for factor, name in enumerate(_DAMAGES, start=2)
)
_MODULES = {
    "healing.py": "from numdiff.kernels._self_healing_cache import njit\n\n" + _KERNELS,
    "plain.py": "from numba import njit\n\n" + _KERNELS,
}

_CALL_ALL = textwrap.dedent(
    """
    import json, sys, warnings
    import numpy as np
    from cachepkg import healing, plain

    report = {"values": {}, "plain_errors": {}, "warnings": [], "cache_hits": {}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name in sys.argv[1:]:
            report["values"][name] = [getattr(healing, name)(np.float64(1.0)), getattr(healing, name)(2)]
            if name != "data_byte_flipped":  # plain Numba would run the damaged machine code
                try:
                    getattr(plain, name)(np.float64(1.0))
                except Exception as err:
                    report["plain_errors"][name] = type(err).__name__
            report["cache_hits"][name] = sum(getattr(healing, name).stats.cache_hits.values())
    report["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    print(json.dumps(report))
    """
)


def _call_all(tmp_path) -> dict:
    env = dict(
        os.environ,
        NUMBA_CACHE_DIR=str(tmp_path / "cache"),
        PYTHONPATH=os.pathsep.join([str(tmp_path / "src"), *sys.path]),
    )
    result = subprocess.run(
        [sys.executable, "-c", _CALL_ALL, *_DAMAGES], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _cache_files(tmp_path, module: str, kernel: str, suffix: str) -> list[Path]:
    return sorted((tmp_path / "cache").rglob(f"{module}.{kernel}-*{suffix}"))


def _damage(path: Path, how: str) -> None:
    raw = path.read_bytes()
    if how == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif how == "garbled":
        path.write_bytes(raw[:16] + bytes((b * 7 + 13) % 256 for b in raw[16:]))
    else:  # one bit in the middle: inside the machine code of a data file, which unpickles fine
        middle = len(raw) // 2
        path.write_bytes(raw[:middle] + bytes([raw[middle] ^ 0x01]) + raw[middle + 1 :])


@pytest.fixture
def cached_package(tmp_path):
    package = tmp_path / "src" / "cachepkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name, source in _MODULES.items():
        (package / name).write_text(source)
    first = _call_all(tmp_path)  # compiles and writes every cache file
    assert first["warnings"] == [] and first["plain_errors"] == {}
    return tmp_path


def test_damaged_cache_files_are_dropped_recompiled_and_warned_about_once(cached_package):
    tmp_path = cached_package
    for kernel in _DAMAGES:
        part, how = kernel.split("_", 1)
        for module in ("healing", "plain") if how != "byte_flipped" else ("healing",):
            files = _cache_files(tmp_path, module, kernel, ".nbi" if part == "index" else ".nbc")
            assert files, f"no cache files for {module}.{kernel}"
            for path in files:
                _damage(path, how)

    second = _call_all(tmp_path)
    for factor, kernel in enumerate(_DAMAGES, start=2):
        assert second["values"][kernel] == [factor + 1.0, 2 * factor + 1.0]
        assert second["cache_hits"][kernel] == 0, f"{kernel}: a damaged entry was loaded"
    # each damage breaks plain Numba (which would load a flipped bit in machine code and run it)
    assert set(second["plain_errors"]) == set(_DAMAGES) - {"data_byte_flipped"}
    (warning,) = second["warnings"]
    cache_folder = str(_cache_files(tmp_path, "healing", _DAMAGES[0], ".nbi")[0].parent)
    assert warning.startswith("KernelCacheWarning") and cache_folder in warning

    third = _call_all(tmp_path)  # the repaired cache loads again, silently
    assert third["warnings"] == []
    assert all(third["cache_hits"][kernel] == 2 for kernel in _DAMAGES)


def test_every_kernel_in_numdiff_uses_the_self_healing_cache():
    import numdiff.kernels.elementwise  # noqa: F401 - imported lazily elsewhere
    import numdiff.kernels.optim  # noqa: F401

    dispatchers = jit._dispatchers("numdiff.kernels")
    assert len(dispatchers) > 20
    plain = [name for name, dispatcher in dispatchers if not isinstance(dispatcher._cache, SelfHealingCache)]
    assert plain == [], "use numdiff.kernels._self_healing_cache.njit for these"


def test_an_index_damaged_between_load_and_save_is_rebuilt(tmp_path, monkeypatch):
    # another process may damage the index after this one looked it up and before it saves
    import numba

    from numdiff.kernels._self_healing_cache import KernelCacheWarning

    # Both: Numba re-reads its config from the environment when the environment has changed since
    # it last looked (an earlier test's monkeypatched NUMBA_CACHE_DIR, say), which would undo a
    # config-only patch halfway through this test.
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "late_damage.py").write_text(_MODULES["healing.py"])
    monkeypatch.syspath_prepend(str(tmp_path))
    import late_damage

    kernel = late_damage.index_garbled
    real_load = SelfHealingCache._load_overload

    def load_then_damage_the_index(cache, sig, target_context):
        found = real_load(cache, sig, target_context)
        index = Path(cache._cache_file._index_path)
        index.parent.mkdir(parents=True, exist_ok=True)
        index.write_bytes(b"\x80\x04garbage")
        return found

    monkeypatch.setattr(SelfHealingCache, "_load_overload", load_then_damage_the_index)
    with pytest.warns(KernelCacheWarning, match="UnpicklingError"):
        assert kernel(1.0) == 4.0
    monkeypatch.setattr(SelfHealingCache, "_load_overload", real_load)
    fresh_cache = SelfHealingCache(kernel.py_func)
    (signature,) = kernel.signatures
    assert fresh_cache.load_overload(signature, kernel.targetctx) is not None  # the saved entry loads
    del sys.modules["late_damage"]
