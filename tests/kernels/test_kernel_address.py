"""Kernels called by address (numdiff.kernels._kernel_address) and gemm built that way
(numdiff.kernels._gemm_body): a call through an empty slot raises, a filled slot runs the build and
passes its exceptions on, and a kernel calling gemm compiles a call instead of gemm's code."""

from __future__ import annotations

import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from numba import types
from numba.extending import intrinsic

from numdiff.kernels._blas import gemm, prepare_blas
from numdiff.kernels._kernel_address import KernelSlot, any_layout, by_address, call_through_slot
from numdiff.kernels._self_healing_cache import njit


@numba.njit
def _halve(x):
    if x < 0:
        raise ValueError("halve: got a negative number")
    return x / 2.0


_HALVE_SLOT = KernelSlot("numdiff_test_halve_slot", "halve: no build in the slot yet")


@intrinsic
def _halve_by_address(typingctx, x):
    def codegen(context, builder, signature, args):
        return call_through_slot(context, builder, _HALVE_SLOT, signature, args)

    return types.float64(types.float64), codegen


@numba.njit
def _halve_twice(x):
    return _halve_by_address(_halve_by_address(x))


def test_a_slot_raises_until_filled_then_runs_the_build_and_passes_its_exceptions_on():
    with pytest.raises(RuntimeError, match="halve: no build in the slot yet"):
        _halve_twice(8.0)
    assert not _HALVE_SLOT.filled
    _HALVE_SLOT.fill(_halve, (types.float64,))
    assert _HALVE_SLOT.filled
    assert _halve_twice(8.0) == 2.0
    with pytest.raises(ValueError, match="halve: got a negative number"):
        _halve_twice(-1.0)


@numba.njit
def _product(a, b, c):
    gemm(False, True, 1.0, a, b, 0.0, c)


def test_a_kernel_calling_gemm_holds_a_call_not_gemms_code():
    prepare_blas(np.float32)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = np.empty((2, 2), np.float32)
    _product(a, a, c)
    np.testing.assert_array_equal(c, a @ a.T)
    caller = _product.overloads[_product.signatures[0]].library.get_llvm_str()
    assert "numdiff_gemm_build_float32" in caller
    defined = [line for line in caller.splitlines() if line.startswith("define")]
    assert any("_product" in line for line in defined)
    # Numba's mangled names hold the module path: numdiff.kernels._gemm_body is "10_gemm_body".
    assert not [line for line in defined if "10_gemm_body" in line or "11_gemm_loops" in line]


def test_gemm_checks_its_operands_inside_a_kernel_that_calls_it():
    prepare_blas(np.float32)
    a = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="gemm: operand shapes do not match the output"):
        _product(a, np.ones((4, 2), np.float32), np.empty((2, 4), np.float32))


@by_address
@njit(cache=True, nogil=True)
def _scaled_sum_and_head(a, k):
    if k < 0:
        raise ValueError("scaled_sum: k must not be negative")
    total = 0.0
    for x in a:
        total += x * k
    return total, a[:2]


@njit(cache=True, nogil=True)
def _calls_twice(a, k):
    total, head = _scaled_sum_and_head(a, k)
    return total + head[1] + _scaled_sum_and_head(a[1:], 2)[0]


def test_a_kernel_calls_a_by_address_helper_through_a_slot_and_gets_its_results_and_exceptions():
    a = np.arange(5.0)
    assert _calls_twice(a, 3) == 30.0 + 1.0 + 20.0
    assert _scaled_sum_and_head(a, 1)[0] == 10.0  # from Python: the helper's dispatcher
    caller = _calls_twice.overloads[_calls_twice.signatures[0]].library.get_llvm_str()
    assert "numdiff_at_tests_kernels_test_kernel_address__scaled_sum_and_head__" in caller
    defined = [line for line in caller.splitlines() if line.startswith("define")]
    assert not [line for line in defined if "_scaled_sum_and_head" in line]
    with pytest.raises(ValueError, match="scaled_sum: k must not be negative"):
        _calls_twice(a, -1)
    # One build per argument types, shared by both calls (the slice a[1:] is typed as a itself).
    assert len(_scaled_sum_and_head.dispatcher.signatures) == 1


@by_address(slot_types=any_layout)
@njit(cache=True, nogil=True)
def _column_sums(a, out):
    for j in range(a.shape[1]):
        out[j] = 0.0
        for i in range(a.shape[0]):
            out[j] += a[i, j]


@njit(cache=True, nogil=True)
def _sums_of_three_layouts(a, out):
    _column_sums(a, out[0])  # C
    _column_sums(a[:, ::2], out[1, :2])  # A
    _column_sums(a.T[:4], out[2, :3])  # F


def test_a_helper_built_for_any_layout_compiles_once_for_every_layout_its_callers_pass():
    a = np.arange(12.0).reshape(3, 4)
    out = np.full((3, 4), -1.0)
    _sums_of_three_layouts(a, out)
    np.testing.assert_array_equal(out[0], a.sum(0))
    np.testing.assert_array_equal(out[1, :2], a[:, ::2].sum(0))
    np.testing.assert_array_equal(out[2, :3], a.T.sum(0))
    assert out[1, 2:].tolist() == [-1.0, -1.0] and out[2, 3] == -1.0
    assert [tuple(t.layout for t in sig[:1]) for sig in _column_sums.dispatcher.signatures] == [("A",)]


_MODULE = '''
import numpy as np
from numdiff.kernels._kernel_address import by_address
from numdiff.kernels._self_healing_cache import njit


@by_address
@njit(cache=True)
def helper(a):
    return 2.0 * a.sum()


@njit(cache=True)
def caller(a):
    return helper(a) + 1.0


print(caller(np.arange(4.0)), caller.stats.cache_hits.get(caller.signatures[0], 0))
'''


def test_a_caller_from_the_disk_cache_fills_its_slots_or_is_compiled_again(tmp_path):
    (tmp_path / "addressed_module.py").write_text(_MODULE)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": os.pathsep.join(sys.path)}

    def run() -> str:
        done = subprocess.run([sys.executable, "addressed_module.py"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=True)  # fmt: skip
        return done.stdout.split()

    assert run() == ["13.0", "0"]  # compiled
    assert run() == ["13.0", "1"]  # the caller loaded, its slot filled from the helper's cache entry
    for entry in (tmp_path / "cache").rglob("*helper*"):
        entry.unlink()
    assert run() == ["13.0", "0"]  # no build of the helper to fill the slot with: compiled again
