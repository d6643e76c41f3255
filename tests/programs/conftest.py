"""The programs run with one Numba thread: their products are small, and on a shared machine a
parallel region can wait milliseconds for a second core (measured: a 16x48x192 GEMM took 3 us on
one thread and 10 ms split over two at load average 12 on 2 cores)."""

from __future__ import annotations

import numba
import pytest


@pytest.fixture(autouse=True)
def _one_numba_thread():
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(threads)
