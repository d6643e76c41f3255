"""`import numdiff` and a first small CNN training step, each in a fresh process (issue 26's goals:
import <= 0.3 s, first step <= 0.3 s beyond the import, with a warm kernel cache).

    python3 benchmarks/bench_import.py [--repeat 7] [--root PATH ...] [--threads 1]

Each round starts one process per case and checkout (alternating, so load drifts hit every row
alike); the reported figures are the best and the median over rounds, of the process's CPU time
and of its wall time. Inside the child, `time.process_time` and `time.perf_counter` are read around
`import numdiff` and around the step, so the step's figure excludes the interpreter's start and the
import. A warm-up round (not counted) fills Numba's kernel cache and Python's bytecode cache.

Cases:
  numpy   `import numpy` alone: the floor under any import of numdiff
  import  `import numdiff`
  step    `import numdiff`, then build Conv2d(1, 8, 3) - ReLU - MaxPool2d(2) - Flatten - Linear(1352, 10)
          and run one forward, backward and SGD step on a batch of 64 x 1 x 28 x 28

Bytecode: a machine that sets PYTHONDONTWRITEBYTECODE recompiles every module on each import, which
no installed copy of numdiff does; the children run with it unset and with PYTHONPYCACHEPREFIX in a
temporary folder, so they read cached bytecode as an installed package would.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = r"""
import json, sys, time, types
case = sys.argv[1]
cpu0, wall0 = time.process_time(), time.perf_counter()
if case == "numpy":
    import numpy
    cpu1, wall1 = time.process_time(), time.perf_counter()
    print(json.dumps({"import_cpu": cpu1 - cpu0, "import_wall": wall1 - wall0}))
    raise SystemExit
import numdiff
cpu1, wall1 = time.process_time(), time.perf_counter()
out = {"import_cpu": cpu1 - cpu0, "import_wall": wall1 - wall0,
       "loaded": sorted(m for m in ("numba", "scipy", "numdiff.nn", "numdiff.func")
                        if type(sys.modules.get(m)) is types.ModuleType)}  # a lazy module has not run
if case == "step":
    nn = numdiff.nn
    numdiff.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 13 * 13, 10))
    optimizer = numdiff.optim.SGD(model.parameters(), lr=0.01)
    x = numdiff.randn(64, 1, 28, 28)
    y = numdiff.randint(0, 10, (64,))
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    float(loss)
    out["step_cpu"] = time.process_time() - cpu1
    out["step_wall"] = time.perf_counter() - wall1
print(json.dumps(out))
"""


def run_child(case: str, root: str, env: dict[str, str]) -> dict[str, float]:
    """One fresh process of `case` in checkout `root`: the child's own figures, plus the whole
    process's CPU time (user + system, from wait4) and wall time."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", _CHILD, case], cwd=root, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    out, err = child.stdout.read(), child.stderr.read()
    child.stdout.close()
    child.stderr.close()
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"bench_import: case {case!r} in {root} failed:\n{err}")
    result = json.loads(out.splitlines()[-1])
    result["process_cpu"] = usage.ru_utime + usage.ru_stime
    result["process_wall"] = wall
    return result


def child_env(threads: int, bytecode_dir: str | None) -> dict[str, str]:
    """The environment of every child: one thread count, cached bytecode in `bytecode_dir` unless
    it is None (see the module docs)."""
    env = dict(os.environ)
    if bytecode_dir is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = bytecode_dir
    for name in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = str(threads)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="rounds counted (after one warm-up round)")
    parser.add_argument("--root", action="append", help="checkout(s) to measure (default: this one)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cases", default="numpy,import,step")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep PYTHONDONTWRITEBYTECODE as set: every module compiled on each import")
    args = parser.parse_args()
    roots = [os.path.abspath(r) for r in (args.root or [ROOT])]
    cases = args.cases.split(",")
    results: dict[tuple[str, str], list[dict[str, float]]] = {(r, c): [] for r in roots for c in cases}
    with tempfile.TemporaryDirectory(prefix="bench_import_pyc_") as bytecode_dir:
        env = child_env(args.threads, None if args.no_bytecode_cache else bytecode_dir)
        for round_index in range(args.repeat + 1):
            for root in roots:
                for case in cases:
                    result = run_child(case, root, env)
                    if round_index:  # round 0 warms the caches
                        results[(root, case)].append(result)
    bytecode = "compiled on each import" if args.no_bytecode_cache else "cached"
    print(f"load average {os.getloadavg()[0]:.2f}, {args.repeat} rounds, threads {args.threads}, bytecode "
          f"{bytecode}; seconds, best / median")
    header = "| checkout | case | import CPU | import wall | step CPU | step wall | process CPU | process wall |"
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for (root, case), runs in results.items():
        cells = []
        for key in ("import_cpu", "import_wall", "step_cpu", "step_wall", "process_cpu", "process_wall"):
            values = [run[key] for run in runs if key in run]
            cells.append(f"{min(values):.3f} / {statistics.median(values):.3f}" if values else "")
        print(f"| {os.path.basename(root)} | {case} | " + " | ".join(cells) + " |")
        loaded = runs[-1].get("loaded")
        if case == "import" and loaded:
            print(f"  (`import numdiff` in {os.path.basename(root)} loaded: {', '.join(loaded)})")


if __name__ == "__main__":
    main()
