"""numdiff at an older checkout against this one, row by row, alternating (the no-regression check).

    git worktree add /tmp/base 3ca70b3
    python benchmarks/compare_commits.py /tmp/base tape|func|compile|cpu|models [--cpu-time] [--threads 2]
                                         [--repeat 15] [--only hessian,jvp]

The benchmark modules of this checkout are copied into the base checkout's benchmarks/ first, so
both sides time the same workloads (the base's own copies are overwritten: use a scratch worktree).
Each side runs in a worker process of its own (its checkout's benchmarks/_isolated.py, importing its
checkout's numdiff), and the two alternate round by round (`_isolated.compare`), so that load on a
shared machine hits both alike. Rows: bench_tape's 100-op chain (forward, forward+backward),
bench_func's, bench_compile's numdiff candidates, bench_cpu's workloads and bench_models' steps
(numdiff eager and compiled). Prints the medians and
head/base per row. Not run by the tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _isolated  # noqa: E402 - benchmarks/_isolated.py


class Checkout(_isolated.Worker):
    """A worker running `root`'s benchmarks/_isolated.py, so `root`'s numdiff."""

    def __init__(self, root: Path, threads: int, cpu_time: bool) -> None:
        self.library = f"numdiff at {root}"
        command = [sys.executable, str(root / "benchmarks" / "_isolated.py"), "--worker", "numdiff", str(threads)]
        command.append("thread" if cpu_time else "wall")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def rows(suite: str) -> list[tuple[str, str, dict]]:
    """(row name, builder, builder kwargs) for `suite`."""
    if suite == "tape":
        return [(f"100-op chain {kind}", "bench_tape:build", {"kind": kind}) for kind in ("forward", "forward+backward")]
    if suite == "func":
        import bench_func

        return [(name, "bench_func:build", {"workload": name, "library": "numdiff"}) for name in bench_func.WORKLOADS]
    if suite == "cpu":
        import bench_cpu

        return [(name, "bench_cpu:build", {"workload": name, "library": "numdiff"}) for name in bench_cpu.WORKLOADS]
    if suite == "compile":
        import bench_compile

        return [
            (f"{name} [{candidate}]", "bench_compile:build", {"workload": name, "candidate": candidate})
            for name in bench_compile.WORKLOADS
            for candidate in ("numdiff compiled", "numdiff eager")
        ]
    if suite == "models":
        import _models

        return [
            (f"{name} [{candidate}]", "bench_models:build_step", {"workload": name, "candidate": candidate, "quick": False})
            for name in _models.WORKLOADS
            for candidate in ("numdiff eager", "numdiff compile")
        ]
    raise SystemExit(f"unknown suite {suite!r}: tape, func, compile, cpu or models")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path, help="a checkout of the older commit (a scratch git worktree)")
    parser.add_argument("suite", choices=("tape", "func", "compile", "cpu", "models"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cpu-time", action="store_true", help="one thread each, timed by time.thread_time")
    parser.add_argument("--repeat", type=int, default=15, help="alternating rounds per row")
    parser.add_argument("--only", help="comma-separated words: the rows whose name contains one")
    args = parser.parse_args()
    base = args.base.resolve()
    for module in HERE.glob("*.py"):
        shutil.copy2(module, base / "benchmarks" / module.name)
    threads = 1 if args.cpu_time else args.threads
    roots = {"base": base, "head": HERE.parent}
    for name, builder, kwargs in rows(args.suite):
        if args.only and not any(word.lower() in name.lower() for word in args.only.split(",")):
            continue
        started = {side: Checkout(root, threads, args.cpu_time) for side, root in roots.items()}
        try:
            for candidate in started.values():
                candidate.request("build", builder=builder, kwargs=kwargs)
            rounds = _isolated.compare(started, args.repeat)
        finally:
            for candidate in started.values():
                candidate.close()
            deadline = time.monotonic() + 5.0
            for candidate in started.values():
                candidate.wait(deadline)
        before, after = rounds["base"].median, rounds["head"].median
        print(f"{name}: base {before * 1e3:.3f} ms, head {after * 1e3:.3f} ms, head/base {after / before:.3f}", flush=True)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
