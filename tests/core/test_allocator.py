"""numdiff._allocator: after `import numdiff`, the megabyte temporaries of a training step are
not handed back to the OS and faulted in again on the next step (glibc's malloc, Linux)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Four 3 MiB arrays made, written and freed, ten times over: the pattern of an eager step's
# temporaries. Prints the page faults of the last nine rounds.
_STEPS = """
import resource
import numpy as np
import numdiff
def step():
    arrays = [np.empty(3 << 18, np.float32) for _ in range(4)]
    for a in arrays:
        a.fill(1.0)
step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(9):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(keep: str) -> int:
    env = dict(os.environ, NUMDIFF_KEEP_FREED_MEMORY=keep, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", _STEPS], env=env, capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc tuning is Linux-only")
def test_freed_step_temporaries_are_not_faulted_in_again():
    from numdiff._allocator import keep_freed_memory

    if not keep_freed_memory():
        pytest.skip("no glibc mallopt in this C library")
    kept = _faults("1")
    handed_back = _faults("0")
    # 9 rounds x 4 arrays x 768 pages when the memory goes back to the OS each round.
    assert handed_back > 9 * 768
    assert kept < 200
