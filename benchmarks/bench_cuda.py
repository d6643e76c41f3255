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


SKIPPED = {
    "conv2d (N=32, 3->16, 32x32, k3)": "conv2d has no CUDA op path in numdiff yet",
    "max_pool2d / avg_pool2d": "the pooling ops do not dispatch to the CUDA kernels yet",
    "LeNet-5 training step": "needs conv2d on CUDA",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    _require_gpu(args.device)
    from numdiff.benchmark import timeit

    torch = _torch_cuda()
    rows = [
        ("matmul 1024^3 fwd+bwd (float32)", lambda: _matmul_workload(1024), lambda t: _torch_matmul(t, 1024)),
        (
            "softmax 4096x1024 fwd+bwd",
            lambda: _softmax_workload(4096, 1024),
            lambda t: _torch_softmax(t, 4096, 1024),
        ),
    ]
    print(f"{'workload':<38} {'numdiff':>12} {'torch':>12} {'ratio':>8}")
    for name, ours, theirs in rows:
        mine = timeit(ours(), repeat=args.repeat).median
        if torch is None:
            print(f"{name:<38} {mine * 1e3:>10.3f}ms {'n/a':>12} {'':>8}")
            continue
        ref = timeit(theirs(torch), repeat=args.repeat).median
        print(f"{name:<38} {mine * 1e3:>10.3f}ms {ref * 1e3:>10.3f}ms {mine / ref:>7.2f}x")
    if torch is None:
        print("(PyTorch with CUDA is not installed: no reference column)")
    for name, why in SKIPPED.items():
        print(f"{name:<38} skipped: {why}")


if __name__ == "__main__":
    main()
