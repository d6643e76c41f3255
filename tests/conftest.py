"""Shared test settings: a Hypothesis profile sized for a shared 2-core machine, and a seeded RNG."""

from __future__ import annotations

import os

# A test of a parallel build runs that build: no helper process compiling it in the background
# while the serial twin stands in (numdiff.kernels._background; its own tests switch it back on).
os.environ.setdefault("NUMDIFF_BACKGROUND_COMPILE", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

import numdiff  # noqa: E402
import numdiff.compile  # noqa: E402, F401 - `import numdiff` loads the core only; the layers that
import numdiff.func  # noqa: E402, F401 - register ops (nn) or attach facts to them (func, compile) load
import numdiff.nn  # noqa: E402, F401 - here, so the tests walking the registry see every op and fact

# No deadline: Numba compiles a kernel the first time a dtype is seen, and the machine is shared.
settings.register_profile(
    "numdiff",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("numdiff")


@pytest.fixture
def rng() -> np.random.Generator:
    """A NumPy generator with a fixed seed, so a failure reproduces."""
    return np.random.default_rng(20240611)


@pytest.fixture(autouse=True)
def _fresh_modes():
    """Every test starts with grad mode on and anomaly detection off, and leaves them that way."""
    yield
    enabled = numdiff.is_grad_enabled()
    anomaly = numdiff.autograd.anomaly.is_enabled()
    numdiff.set_grad_enabled(True)
    numdiff.autograd.set_detect_anomaly(False)
    assert enabled, "a test left grad mode switched off"
    assert not anomaly, "a test left anomaly detection switched on"


@pytest.fixture
def two_threads():
    """numdiff on two Numba threads for the test (skipped where the pool has fewer), then as before."""
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs a Numba pool of at least two threads")
    previous = numdiff.get_num_threads()
    numdiff.set_num_threads(2)
    yield
    numdiff.set_num_threads(previous)

