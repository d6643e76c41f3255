"""The benchmark scripts' command lines: an --only that selects nothing is refused up front."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.parametrize("script", ["bench_cpu.py", "bench_compile.py"])
def test_only_matching_no_workload_names_the_workloads(script):
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--only", "no such workload"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--only 'no such workload' matches no workload" in done.stderr
    assert "digits" in done.stderr  # the list of workloads it could have named
