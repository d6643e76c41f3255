"""numdiff vs PyTorch on the CPU: matmul, MLP/LeNet/digits-CNN steps, conv2d, pooling, relu.

    python benchmarks/bench_cpu.py [--repeat 20] [--threads 2] [--cpu-time] [--busy]
                                   [--only digits,relu] [--markdown benchmarks/RESULTS.md]
                                   [--same-process]

Both libraries run fwd+bwd through their public APIs with autograd (matmul,
nn.functional.conv2d, nn.Module layers, optim.SGD/Adam), written once against either module:
each builder below takes `lib` (numdiff or torch) and makes its inputs and weights from fixed
seeds, so both see the same numbers. Each library runs in a worker process of its own
(benchmarks/_isolated.py) that imports only that library (the numdiff worker never imports
torch), with ``--threads`` threads (numdiff.set_num_threads with NUMBA_NUM_THREADS,
torch.set_num_threads); the two alternate round by round (about 20 ms of calls a round, at least
one call), so that background load hits both alike, and their OpenMP pools (Numba's on the
system libgomp, PyTorch's on its bundled one) never spin against each other in one process.
``--same-process`` keeps the old one-process mode, to compare. Reported per workload: the median
time per call of each, the ratio numdiff/PyTorch, numdiff's GFLOP/s and its share of the nominal
fp32 peak. numdiff's first call (Numba compiling, or loading its disk cache) is timed separately
and never enters the medians. Not run by the tests.

``--threads N`` sets both libraries' thread counts (numdiff.set_num_threads, torch.set_num_threads).
``--cpu-time`` is a cross-check for a shared, loaded machine: one thread each, timed in each worker
with ``time.thread_time`` (CPU time of the calling thread, which other processes' load does not
inflate the way it inflates wall-clock time of two threads that wait on each other).
``--busy`` times every workload twice, alone and then beside one competing process that spins
on a core, and reports each library's slowdown factor (busy median / alone median).
``--only`` keeps the workloads whose name contains one of the comma-separated words.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

# Run from a checkout without installing: the repository root holds the numdiff package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _cpu_report  # noqa: E402 - benchmarks/_cpu_report.py, the Markdown report of a run
import _isolated  # noqa: E402 - benchmarks/_isolated.py, one process per library

THREADS = 2
CLOCK = time.perf_counter


def cpu_clock_ghz() -> tuple[float, str]:
    """The clock the peak is computed from: /proc/cpuinfo 'cpu MHz' (else lscpu-style fallback)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
        mhz = [float(m) for m in re.findall(r"^cpu MHz\s*:\s*([\d.]+)", text, re.M)]
        model = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
        return max(mhz) / 1000.0, (model.group(1).strip() if model else platform.processor())
    except (OSError, ValueError):
        return 2.0, platform.processor() or "unknown CPU"


def peak_gflops(clock_ghz: float) -> float:
    """Nominal fp32 peak: cores x 2 FMA units x 16 fp32 lanes (AVX-512) x 2 flops x clock."""
    return THREADS * 2 * 16 * 2 * clock_ghz


# ----------------------------------------------------------------------------- workloads
# Each builder takes a library (the numdiff or the torch module: the code is the same for both) and
# returns a step that runs fwd+bwd (and, for the training steps, an SGD or Adam update) on inputs
# built from a fixed seed, so that both libraries, each in its own process, see the same numbers.


def _leaf(lib, rng, *shape):
    return lib.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)


def _forward_backward(lib, inputs, fn, out_shape):
    """A step that clears the inputs' grads, runs `fn` on them and backwards a ones gradient."""
    ones = lib.ones(*out_shape)

    def step():
        for x in inputs:
            x.grad = None
        fn(*inputs).backward(ones)

    return step


def matmul_step(lib, n: int = 1024):
    rng = np.random.default_rng(0)
    return _forward_backward(lib, [_leaf(lib, rng, n, n), _leaf(lib, rng, n, n)], lib.matmul, (n, n))


def _seed_weights(lib, model) -> None:
    """PyTorch's default initialisation (uniform in +-1/sqrt(fan_in)) drawn from one NumPy seed, so
    both libraries' models start from the same weights (their parameters come in the same order)."""
    rng = np.random.default_rng(7)
    fan_in = 1
    for p in model.parameters():
        shape = tuple(p.shape)
        if len(shape) > 1:  # a bias takes the fan-in of the weight before it
            fan_in = math.prod(shape[1:])
        p.data = lib.tensor((rng.uniform(-1, 1, shape) / math.sqrt(fan_in)).astype(np.float32))


def _training_step(lib, build, data, labels, optimizer: str = "SGD", lr: float = 0.01):
    """A step of cross-entropy training of the model `build(lib.nn)` makes, on `data` and `labels`."""
    model = build(lib.nn)
    _seed_weights(lib, model)
    x, y = lib.tensor(data), lib.tensor(labels)
    opt = getattr(lib.optim, optimizer)(model.parameters(), lr=lr)

    def step():
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


MLP_SIZES = (784, 512, 512, 10)


def mlp_step(lib, batch: int = 256, sizes: tuple = MLP_SIZES):
    def layers(nn):
        mods = []
        for i in range(len(sizes) - 1):
            mods.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i < len(sizes) - 2:
                mods.append(nn.ReLU())
        return nn.Sequential(*mods)

    rng = np.random.default_rng(1)
    data = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], batch)
    return _training_step(lib, layers, data, labels)


def conv_step(lib, n: int, cin: int, cout: int, size: int, k: int, pad: int):
    rng = np.random.default_rng(2)
    out = size + 2 * pad - k + 1
    return _forward_backward(
        lib,
        [_leaf(lib, rng, n, cin, size, size), _leaf(lib, rng, cout, cin, k, k)],
        lambda x, w: lib.nn.functional.conv2d(x, w, padding=pad),
        (n, cout, out, out),
    )


def conv_flops(n: int, cin: int, cout: int, size: int, k: int, pad: int) -> int:
    out = size + 2 * pad - k + 1
    return 3 * 2 * n * cout * cin * k * k * out * out


def pool_step(lib, kind: str, shape: tuple = (32, 32, 32, 32), k: int = 2):
    rng = np.random.default_rng(3)
    pooled = (shape[0], shape[1], shape[2] // k, shape[3] // k)
    pool = getattr(lib.nn.functional, f"{kind}_pool2d")
    return _forward_backward(lib, [_leaf(lib, rng, *shape)], lambda x: pool(x, k), pooled)


def lenet_step(lib, batch: int = 64):
    def lenet(nn):
        return nn.Sequential(
            nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10),
        )  # fmt: skip

    rng = np.random.default_rng(4)
    data = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, batch)
    return _training_step(lib, lenet, data, labels)


def digits_cnn_step(lib, batch: int = 32):
    """examples/train_digits.py's model and optimizer: one Adam training step on 1x8x8 images."""

    def cnn(nn):
        return nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10),
        )  # fmt: skip

    rng = np.random.default_rng(5)
    data = rng.random((batch, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, 10, batch)
    return _training_step(lib, cnn, data, labels, optimizer="Adam", lr=1e-3)


def relu_step(lib, shape: tuple = (32, 16, 8, 8)):
    rng = np.random.default_rng(6)
    return _forward_backward(lib, [_leaf(lib, rng, *shape)], lib.relu, shape)


# name: (builder, numdiff's flops per step or None)
WORKLOADS: dict[str, tuple[Callable, int | None]] = {
    "matmul 1024^3 fwd+bwd": (matmul_step, 3 * 2 * 1024**3),
    "MLP 256x784-512-512-10 step": (mlp_step, 3 * 2 * 256 * sum(a * b for a, b in zip(MLP_SIZES, MLP_SIZES[1:]))),
    "conv2d N32 C16->32 32x32 k3 p1": (lambda lib: conv_step(lib, 32, 16, 32, 32, 3, 1), conv_flops(32, 16, 32, 32, 3, 1)),
    "conv2d N64 C1->6 28x28 k5": (lambda lib: conv_step(lib, 64, 1, 6, 28, 5, 0), conv_flops(64, 1, 6, 28, 5, 0)),
    "conv2d N8 C64->64 56x56 k3 p1": (lambda lib: conv_step(lib, 8, 64, 64, 56, 3, 1), conv_flops(8, 64, 64, 56, 3, 1)),
    "max_pool2d k2 32x32x32x32": (lambda lib: pool_step(lib, "max"), None),
    "avg_pool2d k2 32x32x32x32": (lambda lib: pool_step(lib, "avg"), None),
    "LeNet step 64x1x28x28": (
        lenet_step,
        3 * 2 * 64 * (6 * 1 * 25 * 24 * 24 + 16 * 6 * 25 * 8 * 8 + 256 * 120 + 120 * 84 + 84 * 10),
    ),
    "digits CNN step 32x1x8x8 Adam": (
        digits_cnn_step,
        3 * 2 * 32 * (16 * 9 * 64 + 32 * 16 * 9 * 16 + 128 * 64 + 64 * 10),
    ),
    "conv2d N32 C16->32 8x8 k3 p1": (lambda lib: conv_step(lib, 32, 16, 32, 8, 3, 1), conv_flops(32, 16, 32, 8, 3, 1)),
    "relu fwd+bwd 32x16x8x8": (relu_step, None),
}


def build(workload: str, library: str):
    """`library`'s step for `workload` (what each worker calls to make its step)."""
    return WORKLOADS[workload][0](importlib.import_module(library))


def compile_kernels() -> float:
    """Seconds numdiff.kernels.compile_all(float32) takes (compiling, or loading the disk cache)."""
    import numdiff

    return sum(numdiff.kernels.compile_all(("float32",)).values())


def numdiff_versions() -> dict:
    import numba

    import numdiff

    return dict(
        numba=numba.__version__, threading_layer=numba.threading_layer(), blas=numdiff.kernels._blas.blas_threading()
    )


def torch_version() -> str:
    import torch

    return torch.__version__


# ----------------------------------------------------------------------------- timing


@contextmanager
def busy_neighbour() -> Iterator[None]:
    """One competing process spinning on a core for the duration (what --busy times beside)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # let it start spinning
        yield
    finally:
        spinner.kill()
        spinner.wait()


def run(repeat: int, busy: bool = False, only: list[str] | None = None, same_process: bool = False):
    """(rows, info): each selected workload timed in both libraries, and the run's details."""
    clock, model = cpu_clock_ghz()
    peak = peak_gflops(clock)
    rows = []
    libraries = {"torch": "torch", "numdiff": "numdiff"}
    with _isolated.candidates(libraries, THREADS, CLOCK is time.thread_time, same_process) as started:
        # PyTorch's worker answers once it has imported torch: compile_all is not timed beside that import.
        torch = started["torch"].request("call", function="bench_cpu:torch_version")["result"]
        compile_seconds = started["numdiff"].request("call", function="bench_cpu:compile_kernels")["result"]
        for name, (_, flops) in WORKLOADS.items():
            if only and not any(word in name for word in only):
                continue
            built = {
                library: candidate.request("build", builder="bench_cpu:build", kwargs=dict(workload=name, library=library))
                for library, candidate in started.items()
            }
            first = built["numdiff"]["first_s"]  # compiles or loads any kernel compile_all did not reach
            alone = _isolated.compare(started, repeat)
            ours, theirs = alone["numdiff"], alone["torch"]
            gflops = flops / (ours.median * 1e9) if flops else None
            rows.append(
                dict(
                    name=name, torch_ms=1e3 * theirs.median, ours_ms=1e3 * ours.median, ratio=ours.median / theirs.median,
                    gflops=gflops, peak_pct=100 * gflops / peak if gflops else None, first_s=first,
                    ours_min_ms=1e3 * ours.min, torch_min_ms=1e3 * theirs.min,
                )
            )  # fmt: skip
            if busy:
                with busy_neighbour():
                    beside = _isolated.compare(started, repeat, {k: v.number for k, v in alone.items()})
                rows[-1]["ours_slowdown"] = beside["numdiff"].median / ours.median
                rows[-1]["torch_slowdown"] = beside["torch"].median / theirs.median
                rows[-1]["busy_ratio"] = beside["numdiff"].median / beside["torch"].median
            print(_cpu_report.row(rows[-1]), flush=True)
        versions = started["numdiff"].request("call", function="bench_cpu:numdiff_versions")["result"]
    info = dict(
        clock=clock, model=model, peak=peak, compile_seconds=compile_seconds, torch=torch, threads=THREADS,
        repeat=repeat, load=os.getloadavg(), cpu_time=CLOCK is time.thread_time, same_process=same_process,
        **versions,
    )  # fmt: skip
    return rows, info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="timed calls per library per workload")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument("--cpu-time", action="store_true", help="one thread each, timed in thread CPU time")
    parser.add_argument("--threads", type=int, default=2, help="threads for both libraries (default 2)")
    parser.add_argument("--busy", action="store_true", help="also time each workload beside a spinning process")
    parser.add_argument("--only", help="comma-separated words: run the workloads whose name contains one")
    parser.add_argument(
        "--same-process", action="store_true", help="both libraries in this one process (the old mode, to compare)"
    )
    args = parser.parse_args()
    only = args.only.split(",") if args.only else None
    if only and not any(word in name for name in WORKLOADS for word in only):
        parser.error(f"--only {args.only!r} matches no workload; the workloads are: {', '.join(WORKLOADS)}")
    global THREADS, CLOCK
    THREADS = args.threads
    if args.cpu_time:
        THREADS, CLOCK = 1, time.thread_time
    print(_cpu_report.header(args.busy), flush=True)
    rows, info = run(args.repeat, args.busy, only, args.same_process)
    text = _cpu_report.markdown(rows, info)
    print()
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
