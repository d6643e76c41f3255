"""numdiff vs PyTorch on the CPU: matmul, MLP/LeNet/digits-CNN steps, conv2d, pooling, relu.

    python benchmarks/bench_cpu.py [--repeat 20] [--threads 2] [--cpu-time] [--busy]
                                   [--only digits,relu] [--markdown benchmarks/RESULTS.md]

Both libraries run fwd+bwd through their public APIs with autograd (numdiff.matmul,
numdiff.nn.functional.conv2d, nn.Module layers, optim.SGD), alternating call by call in one
process so that background load hits both alike, with two threads each by default
(torch.set_num_threads, numdiff.set_num_threads). Reported per workload: the median time of
each, the ratio numdiff/PyTorch, numdiff's GFLOP/s and its share of the nominal fp32 peak.
numdiff's first call (Numba compiling, or loading its disk cache) is timed separately and never
enters the medians. Not run by the tests.

``--threads N`` sets both libraries' thread counts (numdiff.set_num_threads, torch.set_num_threads).
``--cpu-time`` is a cross-check for a shared, loaded machine: one thread each, timed with
``time.thread_time`` (CPU time of the calling thread, which other processes' load does not
inflate the way it inflates wall-clock time of two threads that wait on each other).
``--busy`` times every workload twice, alone and then beside one competing process that spins
on a core, and reports each library's slowdown factor (busy median / alone median).
``--only`` keeps the workloads whose name contains one of the comma-separated words.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
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
# Each builder returns (numdiff_step, torch_step, flops or None). Steps run fwd+bwd (and, for the
# training steps, an SGD or Adam update) on inputs built once, identical in both libraries.


def _pair(rng, *shape):
    import torch

    import numdiff

    data = rng.standard_normal(shape).astype(np.float32)
    return numdiff.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)


def _forward_backward(pairs, ours_fn, theirs_fn, out_shape):
    """(numdiff step, torch step): clear the inputs' grads, run the op, backward a ones gradient."""
    import torch

    import numdiff

    inputs, tinputs = [p[0] for p in pairs], [p[1] for p in pairs]
    ones, tones = numdiff.ones(*out_shape), torch.ones(*out_shape)

    def ours():
        for x in inputs:
            x.grad = None
        ours_fn(*inputs).backward(ones)

    def theirs():
        for tx in tinputs:
            tx.grad = None
        theirs_fn(*tinputs).backward(tones)

    return ours, theirs


def matmul_workload(n: int = 1024):
    import torch

    import numdiff

    rng = np.random.default_rng(0)
    ours, theirs = _forward_backward([_pair(rng, n, n), _pair(rng, n, n)], numdiff.matmul, torch.matmul, (n, n))
    return ours, theirs, 3 * 2 * n**3


def _copy_weights(ours, theirs) -> None:
    import numdiff

    for p, tp in zip(ours.parameters(), theirs.parameters()):
        p.data = numdiff.tensor(tp.detach().numpy().copy())


def _training_step(build, data, labels, optimizer: str = "SGD", lr: float = 0.01):
    """(numdiff step, torch step): one cross-entropy training step of the model `build(nn)` makes,
    the same weights in both libraries, on `data` and `labels`."""
    import torch

    import numdiff

    torch.manual_seed(0)
    model, tmodel = build(numdiff.nn), build(torch.nn)
    _copy_weights(model, tmodel)
    x, tx, y, ty = numdiff.tensor(data), torch.tensor(data), numdiff.tensor(labels), torch.tensor(labels)
    opt = getattr(numdiff.optim, optimizer)(model.parameters(), lr=lr)
    topt = getattr(torch.optim, optimizer)(tmodel.parameters(), lr=lr)

    def ours():
        opt.zero_grad()
        numdiff.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    def theirs():
        topt.zero_grad()
        torch.nn.functional.cross_entropy(tmodel(tx), ty).backward()
        topt.step()

    return ours, theirs


def mlp_workload(batch: int = 256, sizes: tuple = (784, 512, 512, 10)):
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
    ours, theirs = _training_step(layers, data, labels)
    flops = 3 * 2 * batch * sum(sizes[i] * sizes[i + 1] for i in range(len(sizes) - 1))
    return ours, theirs, flops


def conv_workload(n: int, cin: int, cout: int, size: int, k: int, pad: int):
    import torch

    import numdiff

    rng = np.random.default_rng(2)
    out = size + 2 * pad - k + 1
    ours, theirs = _forward_backward(
        [_pair(rng, n, cin, size, size), _pair(rng, cout, cin, k, k)],
        lambda x, w: numdiff.nn.functional.conv2d(x, w, padding=pad),
        lambda x, w: torch.nn.functional.conv2d(x, w, padding=pad),
        (n, cout, out, out),
    )
    return ours, theirs, 3 * 2 * n * cout * cin * k * k * out * out


def pool_workload(kind: str, shape: tuple = (32, 32, 32, 32), k: int = 2):
    import torch

    import numdiff

    rng = np.random.default_rng(3)
    pooled = (shape[0], shape[1], shape[2] // k, shape[3] // k)
    ours_fn = getattr(numdiff.nn.functional, f"{kind}_pool2d")
    theirs_fn = getattr(torch.nn.functional, f"{kind}_pool2d")
    ours, theirs = _forward_backward([_pair(rng, *shape)], lambda x: ours_fn(x, k), lambda x: theirs_fn(x, k), pooled)
    return ours, theirs, None


def lenet_workload(batch: int = 64):
    def lenet(nn):
        return nn.Sequential(
            nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10),
        )  # fmt: skip

    rng = np.random.default_rng(4)
    data = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, batch)
    ours, theirs = _training_step(lenet, data, labels)
    conv = 2 * batch * (6 * 1 * 25 * 24 * 24 + 16 * 6 * 25 * 8 * 8)
    dense = 2 * batch * (256 * 120 + 120 * 84 + 84 * 10)
    return ours, theirs, 3 * (conv + dense)


def digits_cnn_workload(batch: int = 32):
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
    ours, theirs = _training_step(cnn, data, labels, optimizer="Adam", lr=1e-3)
    conv = 2 * batch * (16 * 9 * 64 + 32 * 16 * 9 * 16)
    dense = 2 * batch * (128 * 64 + 64 * 10)
    return ours, theirs, 3 * (conv + dense)


def relu_workload(shape: tuple = (32, 16, 8, 8)):
    import torch

    import numdiff

    rng = np.random.default_rng(6)
    ours, theirs = _forward_backward([_pair(rng, *shape)], numdiff.relu, torch.relu, shape)
    return ours, theirs, None


WORKLOADS: list[tuple[str, Callable]] = [
    ("matmul 1024^3 fwd+bwd", matmul_workload),
    ("MLP 256x784-512-512-10 step", mlp_workload),
    ("conv2d N32 C16->32 32x32 k3 p1", lambda: conv_workload(32, 16, 32, 32, 3, 1)),
    ("conv2d N64 C1->6 28x28 k5", lambda: conv_workload(64, 1, 6, 28, 5, 0)),
    ("conv2d N8 C64->64 56x56 k3 p1", lambda: conv_workload(8, 64, 64, 56, 3, 1)),
    ("max_pool2d k2 32x32x32x32", lambda: pool_workload("max")),
    ("avg_pool2d k2 32x32x32x32", lambda: pool_workload("avg")),
    ("LeNet step 64x1x28x28", lenet_workload),
    ("digits CNN step 32x1x8x8 Adam", digits_cnn_workload),
    ("conv2d N32 C16->32 8x8 k3 p1", lambda: conv_workload(32, 16, 32, 8, 3, 1)),
    ("relu fwd+bwd 32x16x8x8", relu_workload),
]


# ----------------------------------------------------------------------------- timing


def alternate(ours: Callable, theirs: Callable, repeat: int) -> tuple[list[float], list[float]]:
    """Time the two steps in turn, `repeat` times each, after one warm-up call of each."""
    ours()
    theirs()
    ours_times, theirs_times = [], []
    for _ in range(repeat):
        start = CLOCK()
        theirs()
        theirs_times.append(CLOCK() - start)
        start = CLOCK()
        ours()
        ours_times.append(CLOCK() - start)
    return ours_times, theirs_times


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


def run(repeat: int, busy: bool = False, only: list[str] | None = None) -> tuple[list[dict], dict]:
    import numba
    import torch

    import numdiff

    torch.set_num_threads(THREADS)
    numdiff.set_num_threads(THREADS)
    clock, model = cpu_clock_ghz()
    peak = peak_gflops(clock)
    start = time.perf_counter()
    compile_seconds = sum(numdiff.kernels.compile_all(("float32",)).values())
    warm_total = time.perf_counter() - start
    rows = []
    for name, build in WORKLOADS:
        if only and not any(word in name for word in only):
            continue
        ours, theirs, flops = build()
        start = time.perf_counter()
        ours()  # first call: compiles or loads any kernel compile_all did not reach
        first = time.perf_counter() - start
        ours_times, theirs_times = alternate(ours, theirs, repeat)
        ours_ms, theirs_ms = 1e3 * statistics.median(ours_times), 1e3 * statistics.median(theirs_times)
        gflops = flops / (ours_ms * 1e6) if flops else None
        rows.append(
            dict(
                name=name, torch_ms=theirs_ms, ours_ms=ours_ms, ratio=ours_ms / theirs_ms, gflops=gflops,
                peak_pct=100 * gflops / peak if gflops else None, first_s=first, ours_min_ms=1e3 * min(ours_times),
                torch_min_ms=1e3 * min(theirs_times),
            )
        )  # fmt: skip
        if busy:
            with busy_neighbour():
                busy_ours, busy_theirs = alternate(ours, theirs, repeat)
            rows[-1]["ours_slowdown"] = statistics.median(busy_ours) / statistics.median(ours_times)
            rows[-1]["torch_slowdown"] = statistics.median(busy_theirs) / statistics.median(theirs_times)
            rows[-1]["busy_ratio"] = statistics.median(busy_ours) / statistics.median(busy_theirs)
        print(_cpu_report.row(rows[-1]), flush=True)
    info = dict(
        clock=clock, model=model, peak=peak, compile_seconds=compile_seconds, warm_total=warm_total,
        torch=torch.__version__, numba=numba.__version__, threads=THREADS, repeat=repeat,
        threading_layer=numba.threading_layer(), blas=numdiff.kernels._blas.blas_threading(),
        load=os.getloadavg(), cpu_time=CLOCK is time.thread_time,
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
    args = parser.parse_args()
    global THREADS, CLOCK
    THREADS = args.threads
    if args.cpu_time:
        THREADS, CLOCK = 1, time.thread_time
    print(_cpu_report.header(args.busy), flush=True)
    rows, info = run(args.repeat, args.busy, args.only.split(",") if args.only else None)
    text = _cpu_report.markdown(rows, info)
    print()
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
