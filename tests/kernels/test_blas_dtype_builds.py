"""gemm's builds are fixed per dtype on first use (numdiff.kernels._blas.prepare_blas): a float32
model's first step compiles no float64 gemm, and a later float64 product still finds its build."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from numdiff.kernels._blas import prepare_blas

ROOT = Path(__file__).resolve().parents[2]

# The dtypes of gemm's builds (numdiff.kernels._gemm_body), whichever of the two the route builds.
_GEMM_DTYPES = "sorted({str(sig[3].dtype) for build in (gemm_by_blas, gemm_by_blas_in_tiles, gemm_by_loops_or_blas) for sig in build.signatures})"

_FLOAT32_STEP_THEN_FLOAT64 = f"""
import numpy as np
import torch
import numdiff
from numdiff.kernels._gemm_body import gemm_by_blas, gemm_by_blas_in_tiles, gemm_by_loops_or_blas

def step(lib, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, 9, 9, generator=g, dtype=dtype)
    w = torch.randn(4, 3, 3, 3, generator=g, dtype=dtype)
    m = torch.randn(4 * 7 * 7, 5, generator=g, dtype=dtype)
    xs = [lib.tensor(x.numpy(), requires_grad=True), lib.tensor(w.numpy(), requires_grad=True),
          lib.tensor(m.numpy(), requires_grad=True)]
    y = lib.nn.functional.conv2d(xs[0], xs[1]).relu().reshape(2, -1) @ xs[2]
    y.sum().backward()
    return [y.detach().numpy()] + [t.grad.numpy() for t in xs]

for dtype, tol in ((torch.float32, 1e-4), (torch.float64, 1e-12)):
    got, want = step(numdiff, dtype, 0), step(torch, dtype, 0)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    print(*{_GEMM_DTYPES}, sep=",")
"""


def test_a_float32_step_builds_only_float32_gemm_and_float64_still_runs_after():
    env = dict(os.environ, NUMDIFF_BACKGROUND_COMPILE="0")
    done = subprocess.run([sys.executable, "-c", _FLOAT32_STEP_THEN_FLOAT64], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["float32", "float32,float64"]


_FLOAT32_LINALG_FIRST = f"""
import numpy as np
from numdiff.kernels._gemm_body import gemm_by_blas, gemm_by_blas_in_tiles, gemm_by_loops_or_blas
from numdiff.kernels.linalg_blocked import cholesky_blocked, lu_factor_blocked, lu_solve_blocked, solve_triangular_blocked
from numdiff.kernels.linalg_blocked_grads import cholesky_backward_blocked, symmetric_product
from numdiff.kernels.linalg_split import eigh_split, svd_split

rng = np.random.default_rng(0)
g = rng.standard_normal((40, 40))
spd64 = g @ g.T + 40 * np.eye(40)
b64 = rng.standard_normal((40, 3))
for dtype, tol in ((np.float32, 1e-3), (np.float64, 1e-9)):
    spd, b = spd64.astype(dtype), b64.astype(dtype)
    low = cholesky_blocked(spd, block=8, threads=2)[0]
    np.testing.assert_allclose(np.tril(low), np.linalg.cholesky(spd64), rtol=tol, atol=tol)
    x = solve_triangular_blocked(np.tril(low), b, upper=False, threads=2)
    np.testing.assert_allclose(np.tril(low) @ x, b, rtol=tol, atol=tol)
    lu, piv, info = lu_factor_blocked(spd, block=8, threads=2)
    np.testing.assert_allclose(spd64 @ lu_solve_blocked(lu, piv, b, threads=2), b, rtol=tol, atol=tol)
    assert cholesky_backward_blocked(np.tril(low), spd, threads=2, chunk=8).dtype == dtype
    np.testing.assert_allclose(np.tril(symmetric_product(b, b, threads=2, chunk=8)), np.tril(b64 @ b64.T),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(eigh_split(spd, threads=2, block=8)[0], np.linalg.eigvalsh(spd64), rtol=tol)
    np.testing.assert_allclose(svd_split(spd, threads=2, block=8)[1], np.linalg.svd(spd64)[1], rtol=tol)
    print(*{_GEMM_DTYPES}, sep=",")
"""


def test_float32_linear_algebra_first_builds_only_float32_gemm():
    done = subprocess.run([sys.executable, "-c", _FLOAT32_LINALG_FIRST], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["float32", "float32,float64"]


def test_set_num_threads_builds_no_gemm():
    code = ("import numdiff\nfrom numdiff.kernels._gemm_body import gemm_by_blas, gemm_by_blas_in_tiles, gemm_by_loops_or_blas\n"
            f"numdiff.set_num_threads(1)\nprint(len({_GEMM_DTYPES}))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0"]


@pytest.mark.parametrize("dtype", [np.int64, np.float16, "not a dtype"])
def test_prepare_blas_names_a_dtype_gemm_does_not_run_on(dtype):
    with pytest.raises(TypeError, match=r"prepare_blas: gemm runs on float32 or float64 arrays, got dtype"):
        prepare_blas(dtype)
