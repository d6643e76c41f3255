"""First calls of every model in benchmarks/bench_models.py: the first eager training step and the
compiled step's first call, with an empty Numba cache and with a warm one, and which Numba builds
the empty-cache calls spend their time in (issue 26: compile's first call <= 10 s empty, <= 1 s warm).

    python3 benchmarks/bench_first_calls.py [--only mlp_sgd,resnet] [--quick] [--builds 3]

Per model, four fresh processes, one thread each: eager and compiled, each first with a cache
folder of its own that starts empty, then again in a new process on that folder (warm). Each child
times its call with `time.process_time` (CPU seconds, so a loaded machine's figures stay
comparable), after `import numdiff` and building the model. The builds column lists the Numba
compilations of the empty-cache call that took longest, from Numba's ``numba:compile`` events:
a kernel's time includes the callees compiled inside it (gemm's includes loop_gemm's), and a
kernel that calls another linked into it recompiles the callee's code with it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _models  # noqa: E402 - benchmarks/_models.py, the training steps

_CHILD = r"""
import collections, json, sys, time
from numba.core import event

builds = collections.defaultdict(float)
starts = []


class Timer(event.Listener):
    def on_start(self, ev):
        starts.append(time.process_time())

    def on_end(self, ev):
        function = getattr(ev.data["dispatcher"], "py_func", None)
        name = function.__qualname__ if function is not None else str(ev.data["dispatcher"])
        builds[name] += time.process_time() - starts.pop()


event.register("numba:compile", Timer())
workload, mode, quick = sys.argv[1], sys.argv[2], sys.argv[3] == "quick"
import numdiff
import _models

numdiff.manual_seed(0)
step = _models.WORKLOADS[workload](numdiff, quick, numdiff.compile if mode == "compile" else (lambda fn: fn))
start = time.process_time()
step()
first = time.process_time() - start
top = sorted(builds.items(), key=lambda item: -item[1])
print(json.dumps({"first_s": first, "builds": len(builds), "top": top}))
"""


def first_call(workload: str, mode: str, cache: str, quick: bool) -> dict:
    """The child's report for one first call of `workload` (`mode` "eager" or "compile") on `cache`."""
    benchmarks = str(Path(__file__).resolve().parent)
    path = os.pathsep.join([str(ROOT), benchmarks, os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "NUMBA_NUM_THREADS": "1", "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-c", _CHILD, workload, mode, "quick" if quick else "full"],
                          env=env, capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"bench_first_calls: {workload} {mode} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def _builds(report: dict, count: int) -> str:
    return ", ".join(f"{name} {seconds:.1f}" for name, seconds in report["top"][:count])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated words; workloads whose name contains one")
    parser.add_argument("--quick", action="store_true", help="the models' tiny shapes (a smoke run)")
    parser.add_argument(
        "--builds", type=int, default=3, help="longest Numba builds listed per empty-cache call"
    )
    args = parser.parse_args()
    words = args.only.split(",") if args.only else None
    names = [name for name in _models.WORKLOADS if words is None or any(word in name for word in words)]
    if not names:
        parser.error(f"--only {args.only!r} matches no workload; workloads: {', '.join(_models.WORKLOADS)}")
    print(f"load average {os.getloadavg()[0]:.1f}; CPU seconds, one thread")
    print(
        "| model | eager empty | eager warm | compile empty | compile warm | longest builds (empty cache, compile) |"
    )
    print("|---|---:|---:|---:|---:|---|")
    for name in names:
        row = {}
        for mode in ("eager", "compile"):
            with tempfile.TemporaryDirectory(prefix="numdiff_first_calls_") as cache:
                row[mode, "empty"] = first_call(name, mode, cache, args.quick)
                row[mode, "warm"] = first_call(name, mode, cache, args.quick)
        figures = " | ".join(
            f"{row[key]['first_s']:.2f}" for key in sorted(row, key=lambda k: (k[0] != "eager", k[1]))
        )
        print(f"| {name} | {figures} | {_builds(row['compile', 'empty'], args.builds)} |", flush=True)


if __name__ == "__main__":
    main()
