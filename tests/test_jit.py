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
    """
)


@pytest.fixture
def kernel_package(tmp_path, monkeypatch):
    """A throwaway package with two Numba kernels, importable as `jitpkg` (cache in tmp_path)."""
    package = tmp_path / "src" / "jitpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
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
    assert [k.name for k in table] == ["jitpkg.kernels.never_called", "jitpkg.kernels.scale"]
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


def test_numdiff_kernels_are_found():
    names = [k.name for k in jit.compiled_kernels()]
    assert "numdiff.kernels.elementwise.erf_forward" in names
    assert all(name.startswith("numdiff.kernels.") for name in names)
    assert len(names) == len(set(names))


def test_unknown_kernel_name_says_which_exist(kernel_package):
    table = jit.compiled_kernels("jitpkg")
    with pytest.raises(KeyError, match="never_called"):
        table["no_such_kernel"]


def test_warmup_delegates_to_compile_all_and_records_times(monkeypatch):
    from numdiff import kernels
    from numdiff.kernels import elementwise

    calls = []

    def fake_compile_all(dtypes, progress):
        calls.append((dtypes, progress))
        for dtype in dtypes:
            elementwise.erf(np.ones(3, dtype=dtype))
        return {"elementwise.erf_forward": 0.25}

    monkeypatch.setattr(kernels, "compile_all", fake_compile_all, raising=False)
    monkeypatch.setattr(jit, "_warmup_seconds", {})
    table = jit.warmup(("float64",), progress=False)
    assert calls == [(("float64",), False)]
    erf = table["elementwise.erf_forward"]
    assert "(array(float64, 1d, C), array(float64, 1d, C))" in [s.signature for s in erf.signatures]
    assert erf.warmup_seconds == 0.25  # compile_all's own figure wins over the event timer


def test_warmup_rejects_other_dtypes_and_needs_compile_all(monkeypatch):
    from numdiff import kernels

    with pytest.raises(ValueError, match="'int64'"):
        jit.warmup(("int64",))
    monkeypatch.delattr(kernels, "compile_all", raising=False)
    with pytest.raises(RuntimeError, match="compile_all"):
        jit.warmup(("float32",), progress=False)


def test_compile_timer_attributes_seconds_to_the_kernel_compiled(kernel_package):
    from jitpkg import kernels
    from numba.core import event

    timer = jit._CompileTimer("jitpkg")
    with event.install_listener("numba:compile", timer):
        kernels.never_called(np.ones(2))
    assert list(timer.seconds) == ["jitpkg.kernels.never_called"]
