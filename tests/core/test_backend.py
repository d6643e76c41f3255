"""numdiff.backend on the CPU: lookup by array type, the kernel list, clear errors."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff as nd
from numdiff.backend import CPU, backend_for


def test_numpy_arrays_get_the_cpu_backend_and_its_named_kernels():
    assert backend_for(np.zeros(2)) is CPU
    out = np.empty((2, 2))
    CPU.gemm_nn(np.eye(2), np.full((2, 2), 3.0), out)
    np.testing.assert_array_equal(out, np.full((2, 2), 3.0))
    assert set(CPU.kernels()) == set(CPU.kernel_names())


def test_an_unknown_array_type_is_a_type_error_naming_the_type():
    with pytest.raises(TypeError, match="builtins.list"):
        backend_for([1.0, 2.0])


def test_an_unknown_kernel_name_is_an_attribute_error_listing_the_kernels():
    with pytest.raises(AttributeError, match="no kernel 'gemm_xx'.*gemm_nn"):
        CPU.gemm_xx  # noqa: B018 - the attribute read is what raises


def test_cpu_backend_moves_arrays_without_copying():
    x = np.arange(3.0)
    assert CPU.to_host(x) is x
    assert CPU.from_host(x, like=x) is x
    assert CPU.device_of(x) == nd.device("cpu")
