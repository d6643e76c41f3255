"""numdiff.compile vs PyTorch eager (and JAX jit when installed): the workloads of issue 10.

    python benchmarks/bench_compile.py [--threads 2] [--repeat 15] [--cpu-time] [--only NAME]

Workloads: the digits CNN train step (batch 32, 1x8x8; conv16-pool-conv32-pool-fc64-fc10,
forward + backward + Adam), the MLP 256x784-512-512-10 train step (forward + backward + Adam),
and a 100-op elementwise chain (sin, exp, mul, add) forward + backward on float32[16] and
float32[65536]. Each library runs through its public API; the candidates alternate round by
round in one process (numdiff.benchmark.compare), medians reported, ratio = compiled numdiff /
PyTorch eager. numdiff eager is measured too. The first call of the compiled digits model
(trace + compile, or loading the disk cache) is timed separately; ``--first-call`` runs only that,
so it can be measured in a fresh process with a cold or warm cache. ``--cpu-time`` is a
cross-check for a loaded machine: one thread each, timed by ``time.thread_time`` (the CPU time of
the calling thread, which other processes' load does not inflate); JAX is left out there, since
XLA runs its work on threads of its own. Not run by the tests.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _jax_steps  # noqa: E402 - benchmarks/_jax_steps.py, the optional JAX candidates


def digits_models(nd, torch):
    def nd_model():
        nn = nd.nn
        return nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, 10),
        )

    def torch_model():
        nn = torch.nn
        return nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, 10),
        )

    return nd_model, torch_model


def mlp_models(nd, torch):
    def nd_model():
        nn = nd.nn
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))

    def torch_model():
        nn = torch.nn
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))

    return nd_model, torch_model


def train_steps(nd, torch, make_nd, make_torch, x, y, compiled: bool):
    """Closures running one Adam step of each library on (x, y)."""
    nd_net = make_nd()
    nd_opt = nd.optim.Adam(nd_net.parameters(), lr=1e-3)
    xn, yn = nd.tensor(x), nd.tensor(y)

    def loss_of(inputs, targets):
        return nd.nn.functional.cross_entropy(nd_net(inputs), targets)

    # Compiled: the model and its loss are one region (one generated forward, one backward).
    loss_fn = nd.compile(loss_of) if compiled else loss_of

    def nd_step():
        nd_opt.zero_grad()
        loss = loss_fn(xn, yn)
        loss.backward()
        nd_opt.step()

    steps = {("numdiff compiled" if compiled else "numdiff eager"): nd_step}
    if torch is not None:
        t_net = make_torch()
        t_opt = torch.optim.Adam(t_net.parameters(), lr=1e-3)
        xt, yt = torch.tensor(x), torch.tensor(y)

        def torch_step():
            t_opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(t_net(xt), yt)
            loss.backward()
            t_opt.step()

        steps["torch eager"] = torch_step
    return steps


def chain(lib_sin, lib_exp, x):
    for _ in range(25):
        x = lib_exp(lib_sin(x) * 0.9) + 0.1
    return x


def chain_steps(nd, torch, n: int, with_jax: bool = False):
    import numpy as np

    data = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    f = nd.compile(lambda x: chain(nd.sin, nd.exp, x).sum())
    xn = nd.tensor(data, requires_grad=True)

    def compiled():
        xn.grad = None
        f(xn).backward()

    def eager():
        xn.grad = None
        chain(nd.sin, nd.exp, xn).sum().backward()

    steps = {"numdiff compiled": compiled, "numdiff eager": eager}
    if torch is not None:
        xt = torch.tensor(data, requires_grad=True)

        def torch_step():
            xt.grad = None
            chain(torch.sin, torch.exp, xt).sum().backward()

        steps["torch eager"] = torch_step
    if with_jax:
        steps["jax jit"] = _jax_steps.chain_step(data, chain)
    return steps


def first_call(nd) -> float:
    import numpy as np

    make_nd, _ = digits_models(nd, None)
    model = nd.compile(make_nd())
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
    args = parser.parse_args()
    if args.cpu_time:
        args.threads = 1
    os.environ.setdefault("NUMBA_NUM_THREADS", str(args.threads))
    # JAX (XLA) gets the same thread budget.
    multi = "true" if args.threads > 1 else "false"
    os.environ.setdefault(
        "XLA_FLAGS", f"--xla_cpu_multi_thread_eigen={multi} intra_op_parallelism_threads={args.threads}"
    )
    import numdiff as nd

    if args.first_call:
        print(f"first call of the compiled digits model: {first_call(nd):.2f} s")
        return 0
    import numba
    import numpy as np

    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    try:
        import torch

        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    try:
        import jax  # noqa: F401 - optional: a JAX jit column where JAX is installed

        jax.config.update("jax_platforms", "cpu")
        with_jax = not args.cpu_time
    except ImportError:
        with_jax = False
    rng = np.random.default_rng(0)
    workloads = {}
    digits_x, digits_y = rng.standard_normal((32, 1, 8, 8)).astype(np.float32), rng.integers(0, 10, 32)
    mlp_x, mlp_y = rng.standard_normal((256, 784)).astype(np.float32), rng.integers(0, 10, 256)
    for name, (make_nd, make_torch), x, y in (
        ("digits CNN train step", digits_models(nd, torch), digits_x, digits_y),
        ("MLP 784-512-512-10 train step", mlp_models(nd, torch), mlp_x, mlp_y),
    ):
        steps = train_steps(nd, torch, make_nd, make_torch, x, y, compiled=True)
        steps.update(train_steps(nd, None, make_nd, make_torch, x, y, compiled=False))
        if with_jax and name.startswith("digits"):
            steps["jax jit"] = _jax_steps.digits_step(x, y)
        workloads[name] = steps
    workloads["100-op chain fwd+bwd float32[16]"] = chain_steps(nd, torch, 16, with_jax)
    workloads["100-op chain fwd+bwd float32[65536]"] = chain_steps(nd, torch, 65536, with_jax)
    clock = time.thread_time if args.cpu_time else time.perf_counter
    print(f"threads {args.threads}, {'thread CPU time' if args.cpu_time else 'wall clock'}, "
          f"load average {os.getloadavg()[0]:.2f}")
    for name, steps in workloads.items():
        if args.only and args.only not in name:
            continue
        baseline = "torch eager" if "torch eager" in steps else "numdiff eager"
        table = nd.benchmark.compare(steps, repeat=args.repeat, baseline=baseline, clock=clock)
        cells = ", ".join(f"{k} {table.timings[k].median * 1e3:.3f} ms" for k in steps)
        ratio = table.timings["numdiff compiled"].median / table.timings[baseline].median
        extra = ""
        if "jax jit" in steps:
            extra = f", compiled / jax jit = {table.timings['numdiff compiled'].median / table.timings['jax jit'].median:.3f}"
        print(f"{name}: {cells}; compiled / {baseline} = {ratio:.3f}{extra}")
    print(f"load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
