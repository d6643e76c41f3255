"""Shared fixtures for kernel tests: dtype parameter, tolerances and a seeded generator."""

from __future__ import annotations

import numpy as np
import pytest

TOLERANCES = {
    np.dtype(np.float32): dict(rtol=2e-5, atol=2e-5),
    np.dtype(np.float64): dict(rtol=1e-11, atol=1e-11),
}


@pytest.fixture(params=[np.float32, np.float64], ids=["float32", "float64"])
def dtype(request) -> np.dtype:
    return np.dtype(request.param)


@pytest.fixture
def tol(dtype) -> dict:
    return TOLERANCES[dtype]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)
