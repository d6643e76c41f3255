"""numdiff.func and @numdiff.elementwise against torch.func and torch eager, on the CPU.

    python benchmarks/bench_func.py [--repeat 15] [--cpu-time] [--only jacrev] [--markdown benchmarks/RESULTS.md]

Workloads (issue 13's goals in brackets):
- jacrev of an MLP 64->128->64 (tanh) at batch 1 [numdiff <= 1.5x torch.func];
- per-sample gradients of Linear(784, 10) + cross_entropy over 256 samples,
  vmap(grad(loss), in_dims=(None, 0, 0)) with functional_call [<= 1.5x torch.func];
- a 10-op @elementwise function on 10^6 float32 elements, forward and backward, against the
  same function written with torch eager ops [numdiff >= 3x faster].

Both libraries run with two threads, alternating call by call in one process; the reported time is
the median of the repeats, the first (compiling) call excluded. Not run by the tests.

``--cpu-time`` is a cross-check for a loaded machine (as in bench_cpu.py): one thread each, timed
with ``time.thread_time``, the CPU time of the calling thread, which other processes' load does not
inflate.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numba  # noqa: E402
import torch  # noqa: E402

import numdiff  # noqa: E402
from numdiff import func  # noqa: E402

THREADS = 2
CLOCK = time.perf_counter


def alternate(ours, theirs, repeat: int) -> tuple[float, float]:
    ours(), theirs()
    times_ours, times_theirs = [], []
    for _ in range(repeat):
        start = CLOCK()
        ours()
        times_ours.append(CLOCK() - start)
        start = CLOCK()
        theirs()
        times_theirs.append(CLOCK() - start)
    return statistics.median(times_ours), statistics.median(times_theirs)


def jacrev_mlp():
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((128, 64)).astype(np.float32) * 0.1, rng.standard_normal((64, 128)).astype(np.float32) * 0.1
    x = rng.standard_normal((1, 64)).astype(np.float32)
    nw1, nw2, nx = numdiff.tensor(w1), numdiff.tensor(w2), numdiff.tensor(x)
    tw1, tw2, tx = torch.tensor(w1), torch.tensor(w2), torch.tensor(x)

    def ours():
        return func.jacrev(lambda v: numdiff.tanh(v @ nw1.t()) @ nw2.t())(nx)

    def theirs():
        return torch.func.jacrev(lambda v: torch.tanh(v @ tw1.t()) @ tw2.t())(tx)

    np.testing.assert_allclose(ours().numpy(), theirs().numpy(), rtol=1e-4, atol=1e-5)
    return ours, theirs


def per_sample_grads():
    model, tmodel = numdiff.nn.Linear(784, 10), torch.nn.Linear(784, 10)
    with torch.no_grad():
        tmodel.weight.copy_(torch.tensor(model.weight.detach().numpy()))
        tmodel.bias.copy_(torch.tensor(model.bias.detach().numpy()))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((256, 784)).astype(np.float32)
    y = rng.integers(0, 10, 256)
    params = {k: v.detach() for k, v in model.named_parameters()}
    tparams = {k: v.detach() for k, v in tmodel.named_parameters()}
    nx, ny, tx, ty = numdiff.tensor(x), numdiff.tensor(y), torch.tensor(x), torch.tensor(y)

    def loss(p, s, t):
        return numdiff.nn.functional.cross_entropy(func.functional_call(model, p, (s.unsqueeze(0),)), t.unsqueeze(0))

    def tloss(p, s, t):
        return torch.nn.functional.cross_entropy(torch.func.functional_call(tmodel, p, (s.unsqueeze(0),)), t.unsqueeze(0))

    def ours():
        return func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, nx, ny)

    def theirs():
        return torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))(tparams, tx, ty)

    np.testing.assert_allclose(ours()["weight"].numpy(), theirs()["weight"].numpy(), rtol=1e-4, atol=1e-6)
    return ours, theirs


@numdiff.elementwise
def ten_ops(x):
    return math.tanh(x) * math.exp(-x * x) + x / (1.0 + x * x) - 0.5 * math.sin(x)


def torch_ten_ops(x):
    return torch.tanh(x) * torch.exp(-x * x) + x / (1.0 + x * x) - 0.5 * torch.sin(x)


def elementwise_fwd_bwd():
    data = np.random.default_rng(2).standard_normal(10**6).astype(np.float32)
    nx = numdiff.tensor(data, requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)

    def ours():
        nx.grad = None
        ten_ops(nx).sum().backward()
        return nx.grad

    def theirs():
        tx.grad = None
        torch_ten_ops(tx).sum().backward()
        return tx.grad

    np.testing.assert_allclose(ours().numpy(), theirs().numpy(), rtol=1e-4, atol=1e-5)
    return ours, theirs


WORKLOADS = {
    "jacrev MLP 64->128->64, batch 1": (jacrev_mlp, "<= 1.5x torch.func"),
    "per-sample grads Linear(784,10), 256 samples": (per_sample_grads, "<= 1.5x torch.func"),
    "10-op @elementwise, 10^6 float32, fwd+bwd": (elementwise_fwd_bwd, ">= 3x faster than torch eager"),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--cpu-time", action="store_true", help="one thread each, timed by time.thread_time")
    parser.add_argument("--only", help="run only the workloads whose name contains this text (e.g. jacrev)")
    args = parser.parse_args()
    global CLOCK
    threads = 1 if args.cpu_time else THREADS
    CLOCK = time.thread_time if args.cpu_time else time.perf_counter
    torch.set_num_threads(threads)
    numba.set_num_threads(threads)
    rows = []
    for name, (make, goal) in WORKLOADS.items():
        if args.only and args.only.lower() not in name.lower():
            continue
        ours, theirs = make()
        t_ours, t_theirs = alternate(ours, theirs, args.repeat)
        rows.append((name, t_ours, t_theirs, goal))
        print(f"{name}: numdiff {t_ours * 1e3:.3f} ms, torch {t_theirs * 1e3:.3f} ms, ratio {t_ours / t_theirs:.2f} (goal {goal})")
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.markdown:
        lines = [
            "",
            f"## numdiff.func and @elementwise (benchmarks/bench_func.py{' --cpu-time' if args.cpu_time else ''})",
            "",
            f"`python benchmarks/bench_func.py --repeat {args.repeat}{' --cpu-time' if args.cpu_time else ''}`, "
            f"{threads} thread(s) each, {'CPU time of the calling thread' if args.cpu_time else 'wall-clock'}, "
            f"load average {load[0]:.2f} at the end of the run.",
            "",
            "| workload | numdiff (ms) | PyTorch (ms) | numdiff / PyTorch | goal |",
            "|---|---|---|---|---|",
        ]
        lines += [f"| {n} | {a * 1e3:.3f} | {b * 1e3:.3f} | {a / b:.2f} | {g} |" for n, a, b, g in rows]
        with args.markdown.open("a") as file:
            file.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
