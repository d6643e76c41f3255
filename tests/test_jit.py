"""numdiff.jit: compiled_kernels finds every dispatcher and tells compiled from cache-loaded code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numdiff import jit

KERNEL_PACKAGE = textwrap.dedent(
    """
    from numba import njit

    @njit(cache=True)
    def scale(x, factor, out):
        for i in range(x.size):
            out[i] = x[i] * factor

    @njit(cache=True)
    def never_called(x):
        return x

    def offset(x, out):
        for i in range(x.size):
            out[i] = x[i] + 1.0

    BUILDS = {"offset": (njit(cache=True)(offset), None)}  # a dispatcher held in a table
    """
)


@pytest.fixture
def kernel_package(tmp_path, monkeypatch):
    """A throwaway package with three Numba kernels, importable as `jitpkg` (cache in tmp_path)."""
    package = tmp_path / "src" / "jitpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("compile_times = {}\n")
    (package / "kernels.py").write_text(KERNEL_PACKAGE)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    yield tmp_path
    for name in [m for m in sys.modules if m == "jitpkg" or m.startswith("jitpkg.")]:
        del sys.modules[name]


def _listing_in_subprocess(tmp_path) -> dict:
    """Call `scale` in a fresh process and report what compiled_kernels says there."""
    script = textwrap.dedent(
        """
        import json, numpy as np
        from numdiff import jit
        from jitpkg import kernels
        x = np.ones(4); out = np.empty(4)
        kernels.scale(x, 2.0, out)
        table = jit.compiled_kernels("jitpkg")
        print(json.dumps({k.name: [[s.signature, s.source, s.compile_seconds] for s in k.signatures]
                          for k in table}))
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "src"), *sys.path]))
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_compiled_kernels_lists_each_dispatcher_with_its_signatures(kernel_package):
    from jitpkg import kernels

    kernels.scale(np.ones(3, np.float32), 2.0, np.empty(3, np.float32))
    table = jit.compiled_kernels("jitpkg")
    assert [k.name for k in table] == [
        "jitpkg.kernels.never_called",
        "jitpkg.kernels.offset",
        "jitpkg.kernels.scale",
    ]
    assert table["never_called"].signatures == ()
    (sig,) = table["scale"].signatures
    assert sig.signature == "(array(float32, 1d, C), float64, array(float32, 1d, C))"
    assert sig.source == "compiled"
    assert sig.compile_seconds is not None
    text = str(table)
    assert "kernels.scale" in text and "(not compiled yet)" in text
    assert "<table>" in table._repr_html_()


def test_second_process_loads_from_the_disk_cache(kernel_package):
    first = _listing_in_subprocess(kernel_package)
    second = _listing_in_subprocess(kernel_package)
    assert [s[1] for s in first["jitpkg.kernels.scale"]] == ["compiled"]
    assert [s[1:] for s in second["jitpkg.kernels.scale"]] == [["disk cache", None]]
    assert first["jitpkg.kernels.never_called"] == second["jitpkg.kernels.never_called"] == []


def test_warmup_seconds_come_from_the_packages_compile_times(kernel_package, monkeypatch):
    import jitpkg

    monkeypatch.setattr(
        jitpkg,
        "compile_times",
        {
            "kernels.scale[float32]": 0.25,
            "kernels.scale[float64]": 0.5,
            "kernels.offset[serial][float32]": 2.0,
        },
    )
    table = jit.compiled_kernels("jitpkg")
    assert table["scale"].warmup_seconds == 0.75  # summed over the dtypes
    assert table["never_called"].warmup_seconds is None
    assert table["offset"].warmup_seconds is None  # a build name, not the dispatcher's name
    assert table.warmup_calls == jitpkg.compile_times
    assert "0.750" in str(table)


def test_numdiff_kernels_are_found():
    names = [k.name for k in jit.compiled_kernels()]
    assert "numdiff.kernels._conv_cores.forward_core" in names
    assert all(name.startswith("numdiff.kernels.") for name in names)
    assert len(names) == len(set(names))
    from numdiff.kernels import optim

    for serial, parallel in optim.CPU_KERNELS.values():  # builds kept in a dict, not module names
        for build in (serial, parallel):
            assert f"{build.py_func.__module__}.{build.py_func.__qualname__}" in names


def test_unknown_kernel_name_says_which_exist(kernel_package):
    table = jit.compiled_kernels("jitpkg")
    with pytest.raises(KeyError, match="never_called"):
        table["no_such_kernel"]


def test_warmup_runs_compile_all_and_times_every_kernel_it_calls():
    from numdiff import kernels

    table = jit.warmup(("float32",), progress=False)
    calls = {key: seconds for key, seconds in kernels.compile_times.items() if key.endswith("[float32]")}
    assert calls and calls.items() <= table.warmup_calls.items()
    names = {k.name for k in table}
    for key in calls:
        dispatcher = "numdiff.kernels." + key.removesuffix("[float32]")
        if dispatcher in names:
            kernel = table[dispatcher]
            assert kernel.warmup_seconds is not None and kernel.warmup_seconds >= calls[key]
            assert any("float32" in s.signature for s in kernel.signatures), kernel.name
    for family in ("matmul._bgemm", "_conv_cores.forward_core", "_max_pool_cores.max_pool_core"):
        assert table[family].warmup_seconds is not None, f"compile_all no longer names {family}"


def test_warmup_rejects_other_dtypes():
    with pytest.raises(ValueError, match="'int64'"):
        jit.warmup(("int64",))
