"""numdiff.compile vs PyTorch eager (and JAX jit when installed): the workloads of issue 10.

    python benchmarks/bench_compile.py [--threads 2] [--repeat 15] [--cpu-time] [--only NAME]
                                       [--first-call] [--same-process]

Workloads: the digits CNN train step (batch 32, 1x8x8; conv16-pool-conv32-pool-fc64-fc10,
forward + backward + Adam), the MLP 256x784-512-512-10 train step (forward + backward + Adam),
and a 100-op elementwise chain (sin, exp, mul, add) forward + backward on float32[16] and
float32[65536]. Each library runs through its public API. Each candidate (numdiff compiled,
numdiff eager, torch eager, jax jit) runs in a worker process of its own (benchmarks/_isolated.py)
that imports only its library, gives it ``--threads`` threads (numdiff.set_num_threads with
NUMBA_NUM_THREADS, torch.set_num_threads, XLA_FLAGS), builds its step with `build` below and
warms it up; the candidates then alternate round by round (about 20 ms of calls a round), medians
reported, ratio = compiled numdiff / PyTorch eager. In one process, Numba's OpenMP pool (the
system libgomp) and PyTorch's (its bundled libgomp) spin against each other on a two-core
machine and torch eager collapses (230 ms instead of 3.4 ms on the float32[65536] chain at two
threads); ``--same-process`` keeps that old one-process mode, to compare.

The first call of the compiled digits model (trace + compile, or loading the disk cache) is timed
separately; ``--first-call`` runs only that, so it can be measured in a fresh process with a cold
or warm cache. ``--cpu-time`` is a cross-check for a loaded machine: one thread each, timed in each
worker by ``time.thread_time`` (the CPU time of the calling thread, which other processes' load
does not inflate); JAX is left out there, since XLA runs its work on threads of its own. Not run
by the tests.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _isolated  # noqa: E402 - benchmarks/_isolated.py, one process per candidate
import _jax_steps  # noqa: E402 - benchmarks/_jax_steps.py, the optional JAX candidates


def digits_model(nn):
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, 10),
    )  # fmt: skip


def mlp_model(nn):
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def numdiff_train_step(make_model, x, y, compiled: bool):
    """A closure running one numdiff Adam step on (x, y)."""
    import numdiff as nd

    nd.manual_seed(0)  # the same weights in every worker (compare_commits.py times two checkouts)
    net = make_model(nd.nn)
    opt = nd.optim.Adam(net.parameters(), lr=1e-3)
    xn, yn = nd.tensor(x), nd.tensor(y)

    def loss_of(inputs, targets):
        return nd.nn.functional.cross_entropy(net(inputs), targets)

    # Compiled: the model and its loss are one region (one generated forward, one backward).
    loss_fn = nd.compile(loss_of) if compiled else loss_of

    def step():
        opt.zero_grad()
        loss = loss_fn(xn, yn)
        loss.backward()
        opt.step()

    return step


def torch_train_step(make_model, x, y):
    """A closure running one PyTorch eager Adam step on (x, y)."""
    import torch

    torch.manual_seed(0)
    net = make_model(torch.nn)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    xt, yt = torch.tensor(x), torch.tensor(y)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(xt), yt)
        loss.backward()
        opt.step()

    return step


def chain(lib_sin, lib_exp, x):
    for _ in range(25):
        x = lib_exp(lib_sin(x) * 0.9) + 0.1
    return x


def chain_step(candidate: str, n: int):
    """A closure running the 100-op chain forward and backward on float32[n] with `candidate`."""
    data = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    if candidate == "jax jit":
        return _jax_steps.chain_step(data, chain)
    if candidate == "torch eager":
        import torch

        xt = torch.tensor(data, requires_grad=True)

        def torch_step():
            xt.grad = None
            chain(torch.sin, torch.exp, xt).sum().backward()

        return torch_step
    import numdiff as nd

    xn = nd.tensor(data, requires_grad=True)
    compiled = nd.compile(lambda x: chain(nd.sin, nd.exp, x).sum())

    def numdiff_step():
        xn.grad = None
        (compiled(xn) if candidate == "numdiff compiled" else chain(nd.sin, nd.exp, xn).sum()).backward()

    return numdiff_step


# The workloads of issue 10 and the library behind each candidate.
WORKLOADS = (
    "digits CNN train step",
    "MLP 784-512-512-10 train step",
    "100-op chain fwd+bwd float32[16]",
    "100-op chain fwd+bwd float32[65536]",
)
LIBRARY = {"numdiff compiled": "numdiff", "torch eager": "torch", "numdiff eager": "numdiff", "jax jit": "jax"}


def train_data():
    """The digits and MLP batches: (digits x, digits y, MLP x, MLP y)."""
    rng = np.random.default_rng(0)
    digits_x, digits_y = rng.standard_normal((32, 1, 8, 8)).astype(np.float32), rng.integers(0, 10, 32)
    mlp_x, mlp_y = rng.standard_normal((256, 784)).astype(np.float32), rng.integers(0, 10, 256)
    return digits_x, digits_y, mlp_x, mlp_y


def build(workload: str, candidate: str):
    """The step `candidate` runs for `workload` (what each worker calls to make its step)."""
    if workload.startswith("100-op chain"):
        return chain_step(candidate, int(workload.split("[")[1].rstrip("]")))
    digits_x, digits_y, mlp_x, mlp_y = train_data()
    make_model, x, y = (digits_model, digits_x, digits_y) if workload.startswith("digits") else (mlp_model, mlp_x, mlp_y)
    if candidate == "jax jit":
        return _jax_steps.digits_step(x, y)
    if candidate == "torch eager":
        return torch_train_step(make_model, x, y)
    return numdiff_train_step(make_model, x, y, compiled=candidate == "numdiff compiled")


def first_call() -> float:
    import numdiff as nd

    model = nd.compile(digits_model(nd.nn))
    x = nd.tensor(np.random.default_rng(0).standard_normal((32, 1, 8, 8)).astype(np.float32))
    y = nd.tensor(np.arange(32) % 10)
    start = time.perf_counter()
    nd.nn.functional.cross_entropy(model(x), y).backward()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--first-call", action="store_true", help="only time the compiled digits model's first call")
    parser.add_argument("--only", default=None, help="run only workloads whose name contains this")
    parser.add_argument("--cpu-time", action="store_true", help="one thread each, timed by time.thread_time")
    parser.add_argument(
        "--same-process", action="store_true", help="all candidates in this one process (the old mode, to compare)"
    )
    args = parser.parse_args()
    if args.cpu_time:
        args.threads = 1
    if args.first_call:
        _isolated.configure("numdiff", args.threads)
        print(f"first call of the compiled digits model: {first_call():.2f} s")
        return 0
    if args.only and not any(args.only in workload for workload in WORKLOADS):
        parser.error(f"--only {args.only!r} matches no workload; the workloads are: {', '.join(WORKLOADS)}")
    installed = {library for library in ("torch", "jax") if importlib.util.find_spec(library) is not None}
    installed.add("numdiff")
    if args.cpu_time:
        installed.discard("jax")
    libraries = {name: library for name, library in LIBRARY.items() if library in installed}
    print(f"threads {args.threads}, {'thread CPU time' if args.cpu_time else 'wall clock'}, "
          f"load average {os.getloadavg()[0]:.2f}")
    print("all candidates in this one process (--same-process)" if args.same_process
          else "each candidate in its own process (benchmarks/_isolated.py)")  # fmt: skip
    with _isolated.candidates(libraries, args.threads, args.cpu_time, args.same_process) as started:
        for workload in WORKLOADS:
            if args.only and args.only not in workload:
                continue
            # JAX has the digits step and the chains (benchmarks/_jax_steps.py), not the MLP.
            here = {name: c for name, c in started.items() if name != "jax jit" or not workload.startswith("MLP")}
            for name, candidate in here.items():
                candidate.request("build", builder="bench_compile:build", kwargs=dict(workload=workload, candidate=name))
            rounds = _isolated.compare(here, args.repeat)
            baseline = "torch eager" if "torch eager" in here else "numdiff eager"
            cells = ", ".join(f"{name} {rounds[name].median * 1e3:.3f} ms" for name in here)
            ratio = rounds["numdiff compiled"].median / rounds[baseline].median
            extra = ""
            if "jax jit" in here:
                extra = f", compiled / jax jit = {rounds['numdiff compiled'].median / rounds['jax jit'].median:.3f}"
            print(f"{workload}: {cells}; compiled / {baseline} = {ratio:.3f}{extra}", flush=True)
    print(f"load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
