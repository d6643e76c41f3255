"""compile_all: compiles every kernel per dtype and records the time of each first call."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff import kernels
from numdiff.kernels._parallel import KernelPair


def test_compile_all_records_a_time_for_every_kernel_and_dtype():
    times = kernels.compile_all([np.float64, "float32"])
    expected = {
        "matmul._bgemm",
        "_conv_cores.forward_core",
        "_conv_cores.backward_input_core",
        "_conv_cores.backward_weight_core",
        "_conv_batched.batched_forward_core",
        "_conv_batched.batched_backward_input_core",
        "_conv_batched.batched_backward_weight_core",
        "_max_pool_cores.max_pool_core",
        "_max_pool_cores.scatter_core",
        "_max_pool_cores.gather_core",
        "avg_pool._avg_pool_forward_core",
        "avg_pool._avg_pool_backward_core",
        "avg_pool._adaptive_avg_forward_core",
        "avg_pool._adaptive_avg_backward_core",
    }
    assert expected <= set(times)
    assert all(value >= 0.0 for value in times.values())
    for name in expected:
        per_dtype = kernels.compile_times[f"{name}[float64]"] + kernels.compile_times[f"{name}[float32]"]
        assert times[name] == pytest.approx(per_dtype)


def test_compile_all_names_real_dispatchers():
    from numba.core.dispatcher import Dispatcher

    for name in kernels.compile_all(["float64"]):
        if "[" in name:  # optimizer builds are named by step function, not dispatcher
            continue
        module, attr = name.split(".")
        kernel = getattr(getattr(kernels, module), attr)
        if isinstance(kernel, KernelPair):  # "<core>" is its parallel build, "<core>[serial]" the other
            kernel = kernel.parallel
        assert isinstance(kernel, Dispatcher), name


def test_compile_all_rejects_integer_dtypes():
    with pytest.raises(TypeError, match="compile_all: dtypes must be float32 or float64, got int32"):
        kernels.compile_all([np.int32])


def test_compile_all_shows_a_progress_bar_when_asked(capsys):
    pytest.importorskip("tqdm")
    kernels.compile_all([np.float64], progress=True)
    assert "numdiff kernels" in capsys.readouterr().err
