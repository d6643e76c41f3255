"""numdiff on CUDA vs PyTorch on CUDA: the CPU table's workloads, as medians and ratios.

    python benchmarks/bench_cuda.py --device cuda

Needs a real NVIDIA GPU (Numba's simulator runs each thread in Python, so timings there mean
nothing): without one it exits with a message. Every timed call ends with a device synchronize,
so the clock measures finished kernels, not launches. Workloads whose numdiff op has no CUDA path
yet are listed as skipped with the reason, never timed on the host.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

# Run from a checkout without installing: the repository root holds the numdiff package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _require_gpu(device: str) -> None:
    if device != "cuda":
        sys.exit(f"bench_cuda.py benchmarks the CUDA backend; got --device {device}")
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        sys.exit(
            "NUMBA_ENABLE_CUDASIM=1 is set: the simulator runs kernels in Python, so timings mean nothing"
        )
    import numdiff.cuda

    if not numdiff.cuda.is_available():
        sys.exit("no CUDA GPU is available (numba-cuda sees none): nothing to benchmark on this machine")


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _matmul_workload(n: int):
    """numdiff's CUDA GEMM kernels for out = a @ b and its two backward products."""
    import numdiff
    from numdiff.cuda.array import CudaArray
    from numdiff.cuda.kernels import matmul as cuda_matmul

    rng = np.random.default_rng(0)
    a = numdiff.tensor(rng.standard_normal((n, n)), dtype=numdiff.float32, device="cuda")._data
    b = numdiff.tensor(rng.standard_normal((n, n)), dtype=numdiff.float32, device="cuda")._data
    out = CudaArray.empty((n, n), np.float32, a.device)
    grad_a = CudaArray.empty((n, n), np.float32, a.device)
    grad_b = CudaArray.empty((n, n), np.float32, a.device)

    def step():
        cuda_matmul.gemm_nn(a, b, out)
        cuda_matmul.gemm_nt(out, b, grad_a)
        cuda_matmul.gemm_tn(a, out, grad_b)
        numdiff.cuda.synchronize()

    return step


def _torch_matmul(torch, n: int):
    a = torch.randn(n, n, device="cuda", requires_grad=True)
    b = torch.randn(n, n, device="cuda", requires_grad=True)

    def step():
        (a @ b).backward(torch.ones(n, n, device="cuda"))
        torch.cuda.synchronize()

    return step


def _softmax_workload(rows: int, cols: int):
    import numdiff

    x = numdiff.randn(rows, cols, device="cuda", requires_grad=True)

    def step():
        numdiff.softmax(x, 1).sum().backward()
        numdiff.cuda.synchronize()

    return step


def _torch_softmax(torch, rows: int, cols: int):
    x = torch.randn(rows, cols, device="cuda", requires_grad=True)

    def step():
        torch.softmax(x, 1).sum().backward()
        torch.cuda.synchronize()

    return step


def _missing(lib, names: tuple[str, ...]) -> str | None:
    """The first dotted name (under numdiff) that `lib` lacks, or None when it has them all."""
    for name in names:
        target = lib
        for part in name.split("."):
            target = getattr(target, part, None)
        if target is None:
            return name
    return None


def _inputs(lib, shapes: tuple[tuple[int, ...], ...]):
    """float32 tensors of `shapes` on the GPU requiring grad, drawn from one seeded generator."""
    rng = np.random.default_rng(0)
    return [
        lib.tensor(rng.standard_normal(shape).astype(np.float32), device="cuda", requires_grad=True)
        for shape in shapes
    ]


def _conv_workload(lib, sync, n: int, c_in: int, c_out: int, size: int, k: int, pad: int):
    """conv2d(x, w, b, padding=pad) forward, then backward to x, w and b."""
    x, w, b = _inputs(lib, ((n, c_in, size, size), (c_out, c_in, k, k), (c_out,)))

    def step():
        lib.nn.functional.conv2d(x, w, b, padding=pad).sum().backward()
        sync()

    return step


def _pool_workload(lib, sync, kind: str):
    """max_pool2d / avg_pool2d with kernel 2 on 32x32x32x32, forward and backward."""
    (x,) = _inputs(lib, ((32, 32, 32, 32),))
    pool = getattr(lib.nn.functional, kind)

    def step():
        pool(x, 2).sum().backward()
        sync()

    return step


def _lenet(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(6, 16, kernel_size=5),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 120),
        nn.ReLU(),
        nn.Linear(120, 84),
        nn.ReLU(),
        nn.Linear(84, 10),
    )


def _lenet_workload(lib, sync):
    """One LeNet-5 training step on a 64x1x28x28 batch: forward, loss, backward, Adam."""
    rng = np.random.default_rng(0)
    images = lib.tensor(rng.standard_normal((64, 1, 28, 28)).astype(np.float32), device="cuda")
    labels = lib.tensor(rng.integers(0, 10, 64), device="cuda")
    model = _lenet(lib).to("cuda")
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad()
        loss_fn(model(images), labels).backward()
        optimizer.step()
        sync()

    return step


def _shared(build, *sizes):
    """(numdiff builder, torch builder) for a workload written once against either library."""
    import numdiff

    return (
        lambda: build(numdiff, numdiff.cuda.synchronize, *sizes),
        lambda torch: build(torch, torch.cuda.synchronize, *sizes),
    )


CONV = ("nn.functional.conv2d",)
LENET = ("nn.Conv2d", "nn.MaxPool2d", "nn.Linear", "nn.Flatten", "nn.CrossEntropyLoss", "optim.Adam")
# (row name, numdiff names the row needs, (numdiff workload builder, torch workload builder))
ROWS = [
    (
        "matmul 1024^3 fwd+bwd (float32)",
        (),
        (lambda: _matmul_workload(1024), lambda t: _torch_matmul(t, 1024)),
    ),
    (
        "softmax 4096x1024 fwd+bwd",
        (),
        (lambda: _softmax_workload(4096, 1024), lambda t: _torch_softmax(t, 4096, 1024)),
    ),
    ("conv2d N32 C16->32 32x32 k3 p1", CONV, _shared(_conv_workload, 32, 16, 32, 32, 3, 1)),
    ("conv2d N64 C1->6 28x28 k5", CONV, _shared(_conv_workload, 64, 1, 6, 28, 5, 0)),
    ("conv2d N8 C64->64 56x56 k3 p1", CONV, _shared(_conv_workload, 8, 64, 64, 56, 3, 1)),
    ("max_pool2d k2 32x32x32x32", ("nn.functional.max_pool2d",), _shared(_pool_workload, "max_pool2d")),
    ("avg_pool2d k2 32x32x32x32", ("nn.functional.avg_pool2d",), _shared(_pool_workload, "avg_pool2d")),
    ("LeNet-5 step 64x1x28x28 (Adam)", LENET, _shared(_lenet_workload)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    _require_gpu(args.device)
    import numdiff
    from numdiff.benchmark import timeit

    torch = _torch_cuda()
    print(f"{'workload':<38} {'numdiff':>12} {'torch':>12} {'ratio':>8}")
    for name, needs, (ours, theirs) in ROWS:
        missing = _missing(numdiff, needs)
        if missing is not None:
            print(f"{name:<38} skipped: numdiff.{missing} does not exist yet")
            continue
        mine = timeit(ours(), repeat=args.repeat).median
        if torch is None:
            print(f"{name:<38} {mine * 1e3:>10.3f}ms {'n/a':>12} {'':>8}")
            continue
        ref = timeit(theirs(torch), repeat=args.repeat).median
        print(f"{name:<38} {mine * 1e3:>10.3f}ms {ref * 1e3:>10.3f}ms {mine / ref:>7.2f}x")
    if torch is None:
        print("(PyTorch with CUDA is not installed: no reference column)")


if __name__ == "__main__":
    main()
