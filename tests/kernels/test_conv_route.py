"""The im2col convolution cores' product route (numdiff.kernels._conv_route): the pure choice for
each case, the bad environment value, and conv2d / conv_transpose2d forward and both gradients
equal to PyTorch with the route forced each way (``NUMDIFF_CONV_PRODUCTS``), in subprocesses
because the route is chosen once per process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from numdiff.kernels import _conv_route
from numdiff.kernels._blas_library import blas_library
from numdiff.kernels._conv_route import CHOICES, ConvProductsError, choose, openblas_corename, platform_route

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "requested, library, avx512, corename, halved, loops",
    [
        ("auto", "scipy", True, "Haswell", False, True),  # AVX2 kernels on an AVX-512 core
        ("auto", "scipy", True, "Zen", False, True),
        ("auto", "scipy", True, "sandybridge", False, True),  # the names compare without case
        ("auto", "scipy", True, "SkylakeX", False, False),  # OpenBLAS uses AVX-512 itself
        ("auto", "scipy", True, "SkylakeX", True, True),  # ... at half width: a Zen 4
        ("auto", "scipy", True, None, True, True),
        ("auto", "scipy", True, "Cooperlake", False, False),
        ("auto", "scipy", True, "SapphireRapids", False, False),
        ("auto", "scipy", True, None, False, False),  # core unknown
        ("auto", "scipy", False, "Haswell", False, False),  # no AVX-512: OpenBLAS's kernels are as wide
        ("auto", "mkl", True, "Haswell", False, False),  # MKL picks its own kernels
        ("auto", "mkl", True, "SkylakeX", True, False),
        ("blas", "scipy", True, "SkylakeX", True, False),
        ("blas", "scipy", True, "Haswell", False, False),
        ("loops", "mkl", False, None, False, True),
    ],
)
def test_choose_takes_loops_only_where_openblas_runs_narrower_kernels(
    requested, library, avx512, corename, halved, loops
):
    route = choose(requested, library, avx512, corename, halved)
    assert route.loops is loops
    assert route.reason


def test_only_the_conv_route_takes_loops_for_a_cpu_that_halves_avx512(monkeypatch):
    if blas_library().name != "scipy":
        pytest.skip("SciPy's OpenBLAS is not the GEMM library here")
    monkeypatch.setattr(_conv_route, "_host_has_avx512", lambda: True)
    monkeypatch.setattr(_conv_route, "_host_halves_avx512", lambda: True)
    monkeypatch.setattr(_conv_route, "openblas_corename", lambda: "SkylakeX")
    conv = platform_route(conv=True)
    assert conv.loops and "two 256-bit halves" in conv.reason
    assert platform_route().loops is False  # numdiff.kernels._gemm_route's rule


def test_choose_names_the_variable_and_the_choices_for_a_bad_request():
    with pytest.raises(ConvProductsError, match=r"NUMDIFF_CONV_PRODUCTS='fast' is not one of auto, blas, loops"):
        choose("fast", "scipy", True, "Haswell")
    assert CHOICES == ("auto", "blas", "loops")


def test_openblas_corename_reads_the_loaded_scipy_openblas():
    if blas_library().name != "scipy" or not sys.platform.startswith("linux"):
        pytest.skip("SciPy's OpenBLAS is not the GEMM library here, or /proc/self/maps is absent")
    name = openblas_corename()
    assert isinstance(name, str) and name, name
    forced = os.environ.get("OPENBLAS_CORETYPE")
    if forced:
        assert name.lower() == forced.lower()


def _python(program: str, route: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMDIFF_CONV_PRODUCTS=route, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-c", program, *args], cwd=ROOT, env=env, timeout=600, capture_output=True, text=True
    )


def test_a_bad_environment_value_fails_the_first_convolution_with_a_clear_error():
    program = (
        "import numdiff\n"
        "x = numdiff.ones(1, 1, 5, 40)\n"
        "numdiff.nn.functional.conv2d(x, numdiff.ones(2, 1, 2, 2))\n"
    )
    done = _python(program, "fast")
    assert done.returncode != 0
    assert "ConvProductsError" in done.stderr
    assert "NUMDIFF_CONV_PRODUCTS='fast' is not one of auto, blas, loops" in done.stderr


# Each case runs one of the six cores the route feeds (the plan is asserted in the subprocess):
# (N, C, H, W, Co, KH, KW, stride, padding, dilation, groups).
_PROGRAM = r"""
import sys

import numpy as np
import torch

import numdiff
from numdiff.kernels import _conv_families as families
from numdiff.kernels import conv
from numdiff.kernels._conv_route import conv_route

expected_loops = sys.argv[1] == "loops"
assert conv_route().loops is expected_loops, conv_route()
CASES = [
    (2, 6, 11, 13, 5, 3, 2, (2, 1), (1, 0), (1, 2), 1),  # per-image im2col cores
    (3, 20, 9, 40, 36, 1, 1, (1, 1), (0, 0), (1, 1), 2),  # pointwise, grouped (10 -> 18 channels a group)
    (5, 6, 8, 8, 4, 4, 4, (2, 2), (1, 1), (1, 1), 1),  # small outputs: batched cores
    (3, 4, 4, 4, 3, 4, 4, (1, 1), (0, 0), (1, 1), 1),  # to 1x1, batched
    (3, 4, 16, 16, 6, 4, 4, (2, 2), (1, 1), (1, 1), 1),  # rows of 8, batched: the weight gradient's phase runs
]
PLANNED = {
    "forward": (families.CORES, families.BATCHED_CORES),
    "backward_weight": (families.CORES, families.BATCHED_CORES),
}
rng = np.random.default_rng(0)
for dtype, tolerance in ((np.float32, 2e-4), (np.float64, 1e-10)):
    for n, c, h, w, co, kh, kw, stride, padding, dilation, groups in CASES:
        x = rng.standard_normal((n, c, h, w)).astype(dtype)
        weight = rng.standard_normal((co, c // groups, kh, kw)).astype(dtype)
        bias = rng.standard_normal(co).astype(dtype)
        tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, weight, bias))
        tout = torch.nn.functional.conv2d(tx, tw, tb, stride, padding, dilation, groups)
        pads = (padding[0], padding[0], padding[1], padding[1])
        for kind, tables in PLANNED.items():
            core, sizes = conv.conv2d_plan(kind, x.shape, weight.shape, tout.shape, stride, pads, dilation, groups)
            assert any(core in table[kind] for table in tables), (kind, core)
            assert sizes[-1] is (True if expected_loops else None)  # the cores_flag: None lets Numba prune the loops
        go = rng.standard_normal(tuple(tout.shape)).astype(dtype)
        tout.backward(torch.tensor(go))
        nx, nw, nb = (numdiff.tensor(a, requires_grad=True) for a in (x, weight, bias))
        out = numdiff.nn.functional.conv2d(nx, nw, nb, stride, padding, dilation, groups)
        out.backward(numdiff.tensor(go))
        for name, ours, theirs in (("out", out, tout), ("x.grad", nx.grad, tx.grad), ("w.grad", nw.grad, tw.grad),
                                   ("b.grad", nb.grad, tb.grad)):
            scale = max(1.0, float(np.abs(theirs.detach().numpy()).max()))
            np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tolerance,
                                       atol=tolerance * scale, err_msg=f"conv2d {name} {dtype.__name__}")
        # conv_transpose2d with the same weight: its forward is conv2d's input gradient.
        g = rng.standard_normal(tuple(tout.shape)).astype(dtype)
        tg, tw2 = torch.tensor(g, requires_grad=True), torch.tensor(weight, requires_grad=True)
        extra = tuple(x.shape[2 + i] - ((tout.shape[2 + i] - 1) * stride[i] - 2 * padding[i]
                                        + dilation[i] * ((kh, kw)[i] - 1) + 1) for i in range(2))
        tt = torch.nn.functional.conv_transpose2d(tg, tw2, None, stride, padding, extra, groups, dilation)
        gt = rng.standard_normal(tuple(tt.shape)).astype(dtype)
        tt.backward(torch.tensor(gt))
        ng, nw2 = numdiff.tensor(g, requires_grad=True), numdiff.tensor(weight, requires_grad=True)
        nt = numdiff.nn.functional.conv_transpose2d(ng, nw2, None, stride, padding, extra, groups, dilation)
        nt.backward(numdiff.tensor(gt))
        for name, ours, theirs in (("out", nt, tt), ("input.grad", ng.grad, tg.grad), ("w.grad", nw2.grad, tw2.grad)):
            scale = max(1.0, float(np.abs(theirs.detach().numpy()).max()))
            np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tolerance,
                                       atol=tolerance * scale, err_msg=f"conv_transpose2d {name} {dtype.__name__}")
print("route ok", conv_route())
"""


@pytest.mark.parametrize("route", ["loops", "blas"])
def test_both_routes_match_torch_for_conv_and_conv_transpose(route):
    done = _python(_PROGRAM, route, route)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "route ok" in done.stdout
