"""Kernels called by address (numdiff.kernels._kernel_address) and gemm built that way
(numdiff.kernels._gemm_body): a call through an empty slot raises, a filled slot runs the build and
passes its exceptions on, and a kernel calling gemm compiles a call instead of gemm's code."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba import types
from numba.extending import intrinsic

from numdiff.kernels._blas import gemm, prepare_blas
from numdiff.kernels._kernel_address import KernelSlot, call_through_slot


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
