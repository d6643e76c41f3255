"""The GEMM library choice (numdiff.kernels._blas_library): NUMDIFF_BLAS, the mkl extra, equal results."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from numdiff.kernels import _blas_library
from numdiff.kernels._blas_library import BlasLibraryError, choose, find_mkl

ROOT = Path(__file__).resolve().parents[2]


def test_auto_takes_mkl_when_installed_and_scipy_otherwise():
    assert choose("auto", "/lib/libmkl_rt.so.2")[0] == "mkl"
    assert choose("auto", None)[0] == "scipy"


def test_forced_scipy_wins_over_an_installed_mkl():
    assert choose("scipy", "/lib/libmkl_rt.so.2") == ("scipy", "forced by NUMDIFF_BLAS=scipy")


def test_forced_mkl_without_mkl_names_the_extra(monkeypatch):
    with pytest.raises(BlasLibraryError, match=r"NUMDIFF_BLAS=mkl.*pip install 'numdiff\[mkl\]'"):
        choose("mkl", None)
    # The same through the environment variable, as the import would see it.
    monkeypatch.setitem(_blas_library._CHOSEN, "library", None)
    monkeypatch.setattr(_blas_library, "find_mkl", lambda: None)
    monkeypatch.setenv("NUMDIFF_BLAS", "mkl")
    with pytest.raises(BlasLibraryError, match=r"numdiff\[mkl\]"):
        _blas_library.blas_library()


def test_an_unknown_library_name_is_refused_with_the_choices(monkeypatch):
    monkeypatch.setitem(_blas_library._CHOSEN, "library", None)
    monkeypatch.setenv("NUMDIFF_BLAS", "openblas")
    with pytest.raises(BlasLibraryError, match=r"'openblas' is not one of auto, mkl, scipy"):
        _blas_library.blas_library()


_PROGRAM = """
import sys
import numpy as np
import numdiff
from numdiff.kernels._blas_library import blas_library
rng = np.random.default_rng(0)
results = {"library": np.array(blas_library().name)}
for dtype in (numdiff.float32, numdiff.float64):
    a = numdiff.tensor(rng.standard_normal((67, 130)), dtype=dtype, requires_grad=True)
    b = numdiff.tensor(rng.standard_normal((130, 45)), dtype=dtype, requires_grad=True)
    out = a @ b
    (out * out).sum().backward()
    name = str(dtype).split(".")[-1]
    results[f"mm_{name}"] = out.detach().numpy()
    results.update({f"ga_{name}": a.grad.numpy(), f"gb_{name}": b.grad.numpy()})
x = numdiff.tensor(rng.standard_normal((4, 3, 9, 9)), dtype=numdiff.float32, requires_grad=True)
w = numdiff.tensor(rng.standard_normal((5, 3, 3, 3)), dtype=numdiff.float32, requires_grad=True)
y = numdiff.nn.functional.conv2d(x, w, padding=1)
y.sum().backward()
results.update(conv=y.detach().numpy(), conv_gx=x.grad.numpy(), conv_gw=w.grad.numpy())
np.savez(sys.argv[1], **results)
"""


def _run(library: str, path: Path) -> dict:
    env = dict(os.environ, NUMDIFF_BLAS=library)
    subprocess.run([sys.executable, "-c", _PROGRAM, str(path)], check=True, cwd=ROOT, env=env, timeout=600)
    with np.load(path) as data:
        return dict(data)


def test_forced_scipy_and_mkl_give_the_same_products(tmp_path):
    scipy_results = _run("scipy", tmp_path / "scipy.npz")
    assert str(scipy_results.pop("library")) == "scipy"
    if find_mkl() is None:
        pytest.skip("the mkl extra is not installed")
    mkl_results = _run("mkl", tmp_path / "mkl.npz")
    assert str(mkl_results.pop("library")) == "mkl"
    for name, expected in scipy_results.items():
        # Two BLAS sum in different orders: agreement to rounding, relative to the largest entry.
        tolerance = (1e-12 if expected.dtype == np.float64 else 1e-5) * np.abs(expected).max()
        np.testing.assert_allclose(mkl_results[name], expected, rtol=0, atol=tolerance, err_msg=name)


_FIRST_CALL_SPLIT = """
import numpy as np
from numdiff.kernels._blas import gemm_parallel, prepare_blas
prepare_blas()
rng = np.random.default_rng(0)
for dtype in (np.float64, np.float32):
    a, b = rng.standard_normal((300, 200)).astype(dtype), rng.standard_normal((200, 300)).astype(dtype)
    c = np.full((300, 300), np.nan, dtype)
    gemm_parallel(False, False, 1.0, a, b, 0.0, c, 2)  # the process's first product, on two threads
    assert not np.isnan(c).any(), f"{dtype.__name__}: a thread's block was not written"
"""


@pytest.mark.parametrize("library", ["scipy", "mkl"])
def test_the_first_product_of_a_process_can_be_split_across_threads(library):
    # MKL sets itself up on its first call; two threads making it at once left one block unwritten.
    if library == "mkl" and find_mkl() is None:
        pytest.skip("the mkl extra is not installed")
    env = dict(os.environ, NUMDIFF_BLAS=library, NUMBA_NUM_THREADS="2", NUMDIFF_BACKGROUND_COMPILE="0")
    subprocess.run([sys.executable, "-c", _FIRST_CALL_SPLIT], check=True, cwd=ROOT, env=env, timeout=600)


def test_the_first_gemm_kernel_loads_scipys_blas_capsules_without_scipy_linalg():
    # scipy.linalg's __init__ imports all of SciPy's linear algebra (0.2 s); a conv or a Linear layer
    # needs only cython_blas. Once loaded, importing it from scipy.linalg gives that same module.
    code = (
        "import sys\n"
        "import numdiff\n"
        "x = numdiff.randn(2, 1, 8, 8, requires_grad=True)\n"
        "numdiff.nn.functional.conv2d(x, numdiff.randn(3, 1, 3, 3)).sum().backward()\n"
        "before = 'scipy.linalg' in sys.modules\n"
        "from scipy.linalg import cython_blas\n"
        "import scipy.linalg.cython_blas as by_path\n"
        "print(before, cython_blas is by_path is sys.modules['scipy.linalg.cython_blas'])\n"
    )
    env = {**os.environ, "NUMDIFF_BLAS": "scipy"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
