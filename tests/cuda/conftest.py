"""Run the CUDA tests on Numba's simulator when no GPU is present.

The simulator must be chosen before `numba.cuda` is first imported, so this sets
NUMBA_ENABLE_CUDASIM=1 at collection time (or the caller does, as in
``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda``). If numba.cuda was already imported in this
process without the simulator and no GPU is visible, every test here is skipped with that reason.
"""

from __future__ import annotations

import os
import sys

import pytest

if "numba.cuda" not in sys.modules:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    if "numba" in sys.modules:
        from numba.core import config

        config.reload_config()

import numdiff.cuda  # noqa: E402 - after the simulator switch above

_REASON = (
    "CUDA tests need a GPU or Numba's simulator; numba.cuda was imported before the simulator "
    "could be switched on. Run them on their own: NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda"
)


def pytest_collection_modifyitems(config, items):
    if numdiff.cuda.is_available():
        return
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here) and "needs_no_cuda" not in item.keywords:
            item.add_marker(pytest.mark.skip(reason=_REASON))
