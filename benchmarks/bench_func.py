"""numdiff.func and @numdiff.elementwise against torch.func and torch eager, on the CPU.

    python benchmarks/bench_func.py [--repeat 15] [--threads 2] [--cpu-time] [--only jacrev]
                                    [--markdown benchmarks/RESULTS.md] [--same-process]

Workloads (issue 13's goals in brackets):
- jacrev of an MLP 64->128->64 (tanh) at batch 1 [numdiff <= 1.5x torch.func];
- per-sample gradients of Linear(784, 10) + cross_entropy over 256 samples,
  vmap(grad(loss), in_dims=(None, 0, 0)) with functional_call [<= 1.5x torch.func];
- jvp, jacfwd (forward mode) of the same MLP and the hessian of a tanh layer, against torch.func;
- a 10-op @elementwise function on 10^6 float32 elements, forward and backward, against the
  same function written with torch eager ops [numdiff >= 3x faster].

Each builder takes `lib` (numdiff or torch, whose func, nn and tensor APIs match) and makes its
inputs from fixed seeds. First one process with both libraries checks that they agree on every
selected workload; then each library runs in a worker process of its own (benchmarks/_isolated.py,
importing only that library) with ``--threads`` threads, two by default, and the two alternate
round by round (about 20 ms of calls a round); the reported time is the median per call, the
first (compiling) call excluded. ``--same-process`` keeps the old one-process mode, where Numba's
and PyTorch's OpenMP pools spin against each other, to compare. Not run by the tests.

``--cpu-time`` is a cross-check for a loaded machine (as in bench_cpu.py): one thread each, timed
in each worker with ``time.thread_time``, the CPU time of the calling thread, which other
processes' load does not inflate.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _isolated  # noqa: E402 - benchmarks/_isolated.py, one process per library


def jacrev_mlp(lib):
    """jacrev of x -> tanh(x W1^T) W2^T at one 64-vector (lib.func: numdiff.func or torch.func)."""
    rng = np.random.default_rng(0)
    w1 = lib.tensor(rng.standard_normal((128, 64)).astype(np.float32) * 0.1)
    w2 = lib.tensor(rng.standard_normal((64, 128)).astype(np.float32) * 0.1)
    x = lib.tensor(rng.standard_normal((1, 64)).astype(np.float32))

    def step():
        return lib.func.jacrev(lambda v: lib.tanh(v @ w1.t()) @ w2.t())(x)

    return step


def _mlp(lib):
    """x -> tanh(x W1^T) W2^T, 64 -> 128 -> 64, float32, and one 64-vector (fixed seeds)."""
    rng = np.random.default_rng(0)
    w1 = lib.tensor(rng.standard_normal((128, 64)).astype(np.float32) * 0.1)
    w2 = lib.tensor(rng.standard_normal((64, 128)).astype(np.float32) * 0.1)
    x = lib.tensor(rng.standard_normal((1, 64)).astype(np.float32))
    return (lambda v: lib.tanh(v @ w1.t()) @ w2.t()), x


def jvp_mlp(lib):
    """jvp of the MLP at one 64-vector with one tangent: forward mode, one column of the Jacobian."""
    f, x = _mlp(lib)
    v = lib.ones_like(x)

    def step():
        return lib.func.jvp(f, (x,), (v,))[1]

    return step


def jacfwd_mlp(lib):
    """jacfwd of the MLP at one 64-vector: 64 tangents pushed forward under vmap."""
    f, x = _mlp(lib)

    def step():
        return lib.func.jacfwd(f)(x)

    return step


def hessian_mlp(lib):
    """hessian (jacfwd over jacrev) of sum(tanh(x W1^T)) at one 64-vector."""
    rng = np.random.default_rng(0)
    w1 = lib.tensor(rng.standard_normal((128, 64)).astype(np.float32) * 0.1)
    x = lib.tensor(rng.standard_normal(64).astype(np.float32))

    def step():
        return lib.func.hessian(lambda v: lib.tanh(w1 @ v).sum())(x)

    return step


def per_sample_grads(lib):
    """vmap(grad(loss)) over 256 samples of Linear(784, 10) + cross_entropy, with functional_call."""
    rng = np.random.default_rng(1)
    model = lib.nn.Linear(784, 10)
    bound = 1 / math.sqrt(784)  # PyTorch's default initialisation, from one seed for both libraries
    params = {
        "weight": lib.tensor(rng.uniform(-bound, bound, (10, 784)).astype(np.float32)),
        "bias": lib.tensor(rng.uniform(-bound, bound, 10).astype(np.float32)),
    }
    x = lib.tensor(rng.standard_normal((256, 784)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, 256))

    def loss(p, sample, target):
        logits = lib.func.functional_call(model, p, (sample.unsqueeze(0),))
        return lib.nn.functional.cross_entropy(logits, target.unsqueeze(0))

    def step():
        return lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)["weight"]

    return step


def ten_ops(x):
    """The 10-op function on one float: what @numdiff.elementwise compiles."""
    return math.tanh(x) * math.exp(-x * x) + x / (1.0 + x * x) - 0.5 * math.sin(x)


def torch_ten_ops(x):
    """The same function written with torch eager ops."""
    import torch

    return torch.tanh(x) * torch.exp(-x * x) + x / (1.0 + x * x) - 0.5 * torch.sin(x)


def elementwise_fwd_bwd(lib):
    data = np.random.default_rng(2).standard_normal(10**6).astype(np.float32)
    x = lib.tensor(data, requires_grad=True)
    fn = lib.elementwise(ten_ops) if lib.__name__ == "numdiff" else torch_ten_ops

    def step():
        x.grad = None
        fn(x).sum().backward()
        return x.grad

    return step


WORKLOADS = {
    "jacrev MLP 64->128->64, batch 1": (jacrev_mlp, "<= 1.5x torch.func"),
    "jvp MLP 64->128->64, batch 1": (jvp_mlp, "forward mode; torch.func as reference"),
    "jacfwd MLP 64->128->64, batch 1": (jacfwd_mlp, "forward mode; torch.func as reference"),
    "hessian tanh layer 64->128 (jacfwd over jacrev)": (hessian_mlp, "forward over reverse"),
    "per-sample grads Linear(784,10), 256 samples": (per_sample_grads, "<= 1.5x torch.func"),
    "10-op @elementwise, 10^6 float32, fwd+bwd": (elementwise_fwd_bwd, ">= 3x faster than torch eager"),
}
TOLERANCES = {"jacrev": (1e-4, 1e-5), "jvp": (1e-4, 1e-5), "jacfwd": (1e-4, 1e-5), "hessian": (1e-4, 1e-5), "per-sample": (1e-4, 1e-6), "10-op": (1e-4, 1e-5)}


def build(workload: str, library: str):
    """`library`'s step for `workload` (what each worker calls to make its step)."""
    return WORKLOADS[workload][0](importlib.import_module(library))


def check(workload: str) -> None:
    """Both libraries compute the same thing (run in a process of its own before the timing)."""
    ours, theirs = build(workload, "numdiff")(), build(workload, "torch")()
    rtol, atol = next(tol for key, tol in TOLERANCES.items() if workload.startswith(key))
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--cpu-time", action="store_true", help="one thread each, timed by time.thread_time")
    parser.add_argument("--only", help="run only the workloads whose name contains this text (e.g. jacrev)")
    parser.add_argument("--threads", type=int, default=2, help="threads for both libraries (default 2)")
    parser.add_argument(
        "--same-process", action="store_true", help="both libraries in this one process (the old mode, to compare)"
    )
    args = parser.parse_args()
    threads = 1 if args.cpu_time else args.threads
    names = [name for name in WORKLOADS if not args.only or args.only.lower() in name.lower()]
    with _isolated.candidates({"numdiff+torch": "numdiff+torch"}, threads, args.cpu_time, args.same_process) as both:
        for name in names:
            both["numdiff+torch"].request("call", function="bench_func:check", kwargs=dict(workload=name))
    rows = []
    libraries = {"numdiff": "numdiff", "torch": "torch"}
    with _isolated.candidates(libraries, threads, args.cpu_time, args.same_process) as started:
        for name in names:
            for library, candidate in started.items():
                candidate.request("build", builder="bench_func:build", kwargs=dict(workload=name, library=library))
            rounds = _isolated.compare(started, args.repeat)
            t_ours, t_theirs, goal = rounds["numdiff"].median, rounds["torch"].median, WORKLOADS[name][1]
            rows.append((name, t_ours, t_theirs, goal))
            print(
                f"{name}: numdiff {t_ours * 1e3:.3f} ms, torch {t_theirs * 1e3:.3f} ms, "
                f"ratio {t_ours / t_theirs:.2f} (goal {goal})",
                flush=True,
            )
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.markdown:
        where = "both in one process" if args.same_process else "each in its own process"
        lines = [
            "",
            f"## numdiff.func and @elementwise (benchmarks/bench_func.py{' --cpu-time' if args.cpu_time else ''})",
            "",
            f"`python benchmarks/bench_func.py --repeat {args.repeat}{' --cpu-time' if args.cpu_time else ''}`, "
            f"{threads} thread(s) each, {where}, {'CPU time of the calling thread' if args.cpu_time else 'wall-clock'}, "
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
