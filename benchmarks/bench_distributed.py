"""Data-parallel training on MPI: scaling, all_reduce bandwidth and communication overlap.

    python benchmarks/bench_distributed.py            # launches its own mpiexec jobs

- Scaling: a data-parallel epoch of the digits CNN and of an MLP, on 1 process and on 2, one
  thread each, in the two usual settings: the batch per rank fixed (DistributedSampler's usual
  use: each rank steps through its half of the epoch at the single process's batch size) and the
  global batch fixed (split over the ranks, so each step does half the work per rank).
  Efficiency = T1 / (2 T2): 1.0 means two processes halve the epoch.
- Bandwidth: numdiff.distributed.all_reduce against raw mpi4py ``Allreduce`` on the same buffers,
  alternating, medians; the ratio is raw time / numdiff time (1.0 = no overhead).
- Overlap: the all-reduce time DDP did not hide behind backward (its wait at the end of backward)
  against the time the same buckets take with blocking all-reduces.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def digits_model(torch):
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10),
    )


def mlp_model(torch):
    nn = torch.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


WORKLOADS = {
    # name: (model, sample shape, samples per epoch, global batch)
    "digits CNN": (digits_model, (1, 8, 8), 1344, 32),
    "MLP 784-512-512-10": (mlp_model, (784,), 4096, 256),
}


def worker(args: argparse.Namespace) -> None:
    import numba

    import numdiff
    import numdiff.distributed as dist
    from numdiff.nn.parallel import DistributedDataParallel

    numba.set_num_threads(1)
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    results = {}
    for (name, (build, shape, samples, batch)), mode in (
        (item, mode) for item in WORKLOADS.items() for mode in ("per-rank batch", "global batch")
    ):
        rng = np.random.default_rng(0)
        x = numdiff.tensor(rng.standard_normal((samples,) + shape).astype(np.float32))
        y = numdiff.tensor(rng.integers(0, 10, samples))
        numdiff.manual_seed(0)
        model = DistributedDataParallel(build(numdiff))
        optimizer = numdiff.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = numdiff.nn.CrossEntropyLoss()
        local = batch // world if mode == "global batch" else batch
        stride = batch if mode == "global batch" else batch * world
        epochs = []
        for _ in range(args.epochs + 1):  # the first epoch compiles
            model.comm_wait_seconds = 0.0
            dist.barrier()
            start = time.perf_counter()
            for first in range(0, samples, stride):
                lo = first + rank * local
                optimizer.zero_grad()
                loss_fn(model(x[lo : lo + local]), y[lo : lo + local]).backward()
                optimizer.step()
            dist.barrier()
            epochs.append((time.perf_counter() - start, model.comm_wait_seconds))
        steady = epochs[1:]
        blocking = _blocking_bucket_seconds(model, dist, samples // stride)
        results[f"{name}, {mode}"] = {
            "epoch_s": float(np.median([e for e, _ in steady])),
            "wait_s": float(np.median([w for _, w in steady])),
            "blocking_allreduce_s": blocking,
        }
    if world > 1:
        results["bandwidth"] = _bandwidth(dist, args.repeat)
    if rank == 0:
        print(json.dumps(results))
    dist.destroy_process_group()


def _blocking_bucket_seconds(model, dist, steps: int) -> float:
    """Seconds that `steps` rounds of blocking all-reduces of DDP's buckets take."""
    from mpi4py import MPI

    comm = dist._group.current().comm
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        for bucket in model._buckets:
            comm.Allreduce(MPI.IN_PLACE, bucket.buffer, MPI.SUM)
    return time.perf_counter() - start


def _bandwidth(dist, repeat: int) -> dict:
    from mpi4py import MPI

    import numdiff

    comm = dist._group.current().comm
    out = {}
    for mib in (1, 16):
        buffer = np.ones(mib * 2**20 // 4, dtype=np.float32)
        tensor = numdiff.from_numpy(buffer.copy())
        raw, ours = [], []
        for _ in range(repeat):
            dist.barrier()
            start = time.perf_counter()
            comm.Allreduce(MPI.IN_PLACE, buffer, MPI.SUM)
            raw.append(time.perf_counter() - start)
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(tensor)
            ours.append(time.perf_counter() - start)
        out[f"{mib} MiB"] = {"raw_s": float(np.median(raw)), "numdiff_s": float(np.median(ours))}
    return out


def launch(ranks: int, args: argparse.Namespace) -> dict:
    command = [shutil.which("mpiexec") or "mpiexec", "-n", str(ranks), sys.executable, __file__, "--worker",
               "--epochs", str(args.epochs), "--repeat", str(args.repeat)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"mpiexec -n {ranks} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs after a warm-up epoch")
    parser.add_argument("--repeat", type=int, default=21, help="alternating all_reduce repeats")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    print(f"load average before: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    one, two = launch(1, args), launch(2, args)
    print("\n| workload | 1 process epoch s | 2 processes epoch s | scaling efficiency | all-reduce hidden behind backward |")
    print("|---|---:|---:|---:|---:|")
    for name in [k for k in two if k != "bandwidth"]:
        t1, t2 = one[name]["epoch_s"], two[name]["epoch_s"]
        blocking, wait = two[name]["blocking_allreduce_s"], two[name]["wait_s"]
        hidden = max(0.0, 1.0 - wait / blocking) if blocking > 0 else float("nan")
        print(f"| {name} | {t1:.3f} | {t2:.3f} | {t1 / (2 * t2):.2f} | {hidden:.0%} "
              f"(wait {wait:.3f} s of {blocking:.3f} s) |")
    print("\n| buffer | raw mpi4py Allreduce ms | numdiff all_reduce ms | numdiff bandwidth / raw |")
    print("|---|---:|---:|---:|")
    for size, row in two["bandwidth"].items():
        print(f"| {size} float32 | {row['raw_s'] * 1e3:.3f} | {row['numdiff_s'] * 1e3:.3f} | "
              f"{row['raw_s'] / row['numdiff_s']:.2f} |")
    print(f"\nload average after: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
