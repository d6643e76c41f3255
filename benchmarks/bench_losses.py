"""Pointwise losses and softplus, forward + backward (``y.backward(ones)``), numdiff against PyTorch.

One process, one thread, thread CPU time, the minimum over REPS calls per library (default 9),
float32 (1024, 512) inputs; the leaves are made once and their .grad cleared between calls.

    python3 benchmarks/bench_losses.py [name ...]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numdiff  # noqa: E402

torch.set_num_threads(1)
SHAPE = (1024, 512)
_rng = np.random.default_rng(0)
A = _rng.standard_normal(SHAPE).astype(np.float32)
B = _rng.standard_normal(SHAPE).astype(np.float32)
P = _rng.random(SHAPE).astype(np.float32) * 0.98 + 0.01
BITS = (_rng.random(SHAPE) > 0.5).astype(np.float32)
POS_WEIGHT = _rng.random(SHAPE[-1:]).astype(np.float32) + 0.5


def cases(make, f) -> dict:
    """name -> a call of the loss, for one library (`make` builds its tensors, `f` its functional)."""
    made: dict = {}

    def t(x, grad=True):
        if (id(x), grad) not in made:
            made[id(x), grad] = make(x, requires_grad=grad)
        leaf = made[id(x), grad]
        leaf.grad = None
        return leaf

    return {
        "smooth_l1": lambda: f.smooth_l1_loss(t(A), t(B, False)),
        "smooth_l1_none": lambda: f.smooth_l1_loss(t(A), t(B, False), reduction="none"),
        "huber": lambda: f.huber_loss(t(A), t(B, False), delta=0.7),
        "mse": lambda: f.mse_loss(t(A), t(B, False)),
        "l1": lambda: f.l1_loss(t(A), t(B, False)),
        "bce_logits": lambda: f.binary_cross_entropy_with_logits(t(A), t(BITS, False)),
        "bce_logits_pw": lambda: f.binary_cross_entropy_with_logits(t(A), t(BITS, False), pos_weight=t(POS_WEIGHT, False)),
        "bce": lambda: f.binary_cross_entropy(t(P), t(BITS, False)),
        "softplus": lambda: f.softplus(t(A), beta=2.0),
        "soft_margin": lambda: f.soft_margin_loss(t(A), t(np.sign(B), False)),
        "poisson_nll": lambda: f.poisson_nll_loss(t(A), t(np.abs(B), False)),
        "kl_div": lambda: f.kl_div(t(A), t(P, False), reduction="batchmean"),
    }


def best_time(call, ones_like, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.thread_time()
        out = call()
        out.backward(ones_like(out))
        best = min(best, time.thread_time() - start)
    return best


def main() -> None:
    reps = int(os.environ.get("REPS", 9))
    ours, theirs = cases(numdiff.tensor, numdiff.nn.functional), cases(torch.tensor, torch.nn.functional)
    for name in ours:
        if sys.argv[1:] and name not in sys.argv[1:]:
            continue
        best_time(ours[name], numdiff.ones_like, 1)  # compiles the kernels
        mine = best_time(ours[name], numdiff.ones_like, reps)
        reference = best_time(theirs[name], torch.ones_like, reps)
        print(f"{name:16s} numdiff {mine * 1e3:7.2f} ms  torch {reference * 1e3:7.2f} ms  ratio {mine / reference:5.2f}", flush=True)


if __name__ == "__main__":
    main()
