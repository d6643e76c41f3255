"""Serial and parallel kernel builds chosen by size, and numdiff.set_num_threads."""

from __future__ import annotations

import os

import numpy as np
import pytest

import numdiff
from numdiff.kernels import conv, pool
from numdiff.kernels._conv_cores import forward_core
from numdiff.kernels._parallel import GRAIN_ELEMENTS, always_parallel, always_serial


def test_small_work_runs_the_serial_build_on_one_part(two_threads):
    kernel, parts = forward_core.pick(GRAIN_ELEMENTS - 1)
    assert kernel is forward_core.serial and parts == 1
    kernel, parts = forward_core.pick(GRAIN_ELEMENTS)
    assert kernel is forward_core.parallel and parts == 2


def test_always_serial_picks_the_serial_build_for_any_work(two_threads):
    with always_serial():
        assert forward_core.pick(10**9) == (forward_core.serial, 1)
    assert forward_core.pick(10**9) == (forward_core.parallel, 2)


def test_one_thread_always_runs_serially():
    previous = numdiff.get_num_threads()
    numdiff.set_num_threads(1)
    try:
        assert numdiff.get_num_threads() == 1
        assert forward_core.pick(10**9) == (forward_core.serial, 1)
    finally:
        numdiff.set_num_threads(previous)


def test_serial_and_parallel_builds_agree(two_threads):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 6, 6))
    w = rng.standard_normal((5, 4, 3, 3))
    out_serial, out_parallel = np.empty((3, 5, 6, 6)), np.empty((3, 5, 6, 6))
    conv.conv2d_forward(x, w, None, out_serial, padding=(1, 1, 1, 1))
    pooled_serial, at_serial = np.empty((3, 4, 3, 3)), np.empty((3, 4, 3, 3), np.int64)
    pool.max_pool2d_forward(x, pooled_serial, at_serial, (2, 2), (2, 2))
    with always_parallel():
        conv.conv2d_forward(x, w, None, out_parallel, padding=(1, 1, 1, 1))
        pooled_parallel, at_parallel = np.empty((3, 4, 3, 3)), np.empty((3, 4, 3, 3), np.int64)
        pool.max_pool2d_forward(x, pooled_parallel, at_parallel, (2, 2), (2, 2))
    np.testing.assert_allclose(out_parallel, out_serial, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(pooled_parallel, pooled_serial)
    np.testing.assert_array_equal(at_parallel, at_serial)


@pytest.mark.parametrize(
    "value, error, message",
    [(0, ValueError, "between 1 and"), (10**6, ValueError, "got 1000000"), (1.5, TypeError, "float"),
     (True, TypeError, "bool")],
)  # fmt: skip
def test_set_num_threads_rejects_bad_counts(value, error, message):
    before = numdiff.get_num_threads()
    with pytest.raises(error, match=message):
        numdiff.set_num_threads(value)
    assert numdiff.get_num_threads() == before


_POOL = """
import os
import numba.np.ufunc.parallel as pool
import numdiff
print(pool._is_initialized, os.environ.get("GOMP_SPINCOUNT"), numdiff._threads.SPIN_COUNT)
"""


@pytest.mark.parametrize("environment", [{}, {"GOMP_SPINCOUNT": "123"}, {"OMP_WAIT_POLICY": "passive"}])
def test_numdiff_shortens_libgomps_spin_unless_the_user_set_it(environment):
    # Importing numdiff sets GOMP_SPINCOUNT (libgomp reads it when Numba's pool starts) unless the
    # user set a spin count or wait policy, and does not start the pool (fork safety).
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    result = subprocess.run([sys.executable, "-c", _POOL], env={**env, **environment},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    started, spin, ours = result.stdout.split()
    expected = environment.get("GOMP_SPINCOUNT", "None" if environment else ours)
    assert started == "False" and spin == expected


def test_fewer_jobs_than_threads_runs_the_serial_build(two_threads):
    # A prange over one item leaves the second thread idle at the region's barrier.
    assert forward_core.pick(10**9, jobs=1) == (forward_core.serial, 1)
    assert forward_core.pick(10**9, jobs=2) == (forward_core.parallel, 2)
    with always_parallel():
        assert forward_core.pick(0, jobs=1) == (forward_core.parallel, 2)


_RUNTIMES = """
import sys
first, second = sys.argv[1:]
__import__(first)
__import__(second)
import numdiff._threads as threads
print(repr([(path.rsplit("/", 3)[-3], short) for path, short in threads.openmp_runtimes() if "torch" in path]))
"""


@pytest.mark.parametrize("order, environment, expected_short_spin", [
    (("torch", "numdiff"), {}, False),  # torch's libgomp loaded before numdiff set GOMP_SPINCOUNT
    (("numdiff", "torch"), {}, True),  # it loads after, and reads numdiff's setting
    (("torch", "numdiff"), {"GOMP_SPINCOUNT": "10000"}, True),  # the user's setting reached both
])  # fmt: skip
def test_openmp_runtimes_names_one_that_kept_its_own_spin(order, environment, expected_short_spin):
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    result = subprocess.run([sys.executable, "-c", _RUNTIMES, *order], env={**env, **environment},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    torch_runtimes = eval(result.stdout)
    if not torch_runtimes:
        pytest.skip("this torch build loads no OpenMP runtime of its own")
    assert torch_runtimes == [("torch", expected_short_spin)] * len(torch_runtimes)


def test_show_config_lists_the_openmp_runtimes():
    from numdiff._show_config import config_lines

    text = "\n".join(config_lines())
    assert "OpenMP runtimes" in text
    for path, _ in numdiff._threads.openmp_runtimes():
        assert path in text
