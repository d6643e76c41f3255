"""Run the CUDA tests on Numba's simulator when no GPU is present.

The simulator must be chosen before `numba.cuda` is first imported. When pytest is asked for
tests/cuda alone, this sets NUMBA_ENABLE_CUDASIM=1 itself (as does
``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda``). In the whole-suite run it leaves the
process as it is (other tests expect the real driver state), so without a GPU every test here is
skipped with the command that runs them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _only_these_tests_requested() -> bool:
    """True for ``pytest tests/cuda[...]``: then switching the simulator on affects nothing else."""
    paths = [Path(a.split("::")[0]).resolve() for a in sys.argv[1:] if Path(a.split("::")[0]).exists()]
    return bool(paths) and all(p == HERE or HERE in p.parents for p in paths)


if "numba.cuda" not in sys.modules and _only_these_tests_requested():
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    if "numba" in sys.modules:
        from numba.core import config

        config.reload_config()

import numdiff.cuda  # noqa: E402 - after the simulator switch above

_REASON = (
    "no GPU, and Numba's CUDA simulator is off (it must be switched on before numba.cuda is "
    "imported, so the whole-suite run leaves it off). Run: NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda"
)


def pytest_collection_modifyitems(config, items):
    if numdiff.cuda.is_available():
        return
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here) and "needs_no_cuda" not in item.keywords:
            item.add_marker(pytest.mark.skip(reason=_REASON))
