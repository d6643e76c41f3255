"""bench_models.py --torch-first: the notebook's import order, in one process only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_torch_first_needs_the_same_process():
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_models.py"), "--torch-first", "--only", "gcn"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "--torch-first orders the imports of one process: use it with --same-process" in done.stderr


def test_torch_first_quick_run_steps_every_candidate_with_torch_loaded_first():
    pytest.importorskip("torch")
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_models.py"), "--quick", "--same-process", "--torch-first",
         "--only", "gcn"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| gcn |")]
    assert len(rows) == 1 and "error" not in done.stdout, done.stdout
