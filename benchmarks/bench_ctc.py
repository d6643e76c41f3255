"""CTC loss, log_softmax(logits) -> ctc_loss(reduction='mean') -> backward, numdiff against PyTorch.

One process, one thread, thread CPU time, numdiff and PyTorch alternating call by call, the
minimum over REPS calls per library (default 9) after two warm-up calls. N = 16 sequences; T
frames, C classes (blank 0), padded targets of up to S labels (lengths S/2..S, input lengths
3T/4..T); float32 and float64.

    python3 benchmarks/bench_ctc.py [REPS]
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
SIZES = [(50, 28, 10), (100, 40, 20), (150, 60, 30), (200, 80, 40)]  # (T, C, S)
ITEMS = 16


def step_of(
    lib, logits: np.ndarray, targets: np.ndarray, input_lengths: np.ndarray, target_lengths: np.ndarray
):
    """One call of the loss and its backward in `lib` (numdiff or torch)."""
    constants = (lib.tensor(targets), lib.tensor(input_lengths), lib.tensor(target_lengths))

    def step() -> None:
        leaf = lib.tensor(logits, requires_grad=True)
        lib.nn.functional.ctc_loss(leaf.log_softmax(2), *constants).backward()

    return step


def main(reps: int = 9) -> None:
    rng = np.random.default_rng(0)
    for steps, classes, longest in SIZES:
        for dtype in (np.float32, np.float64):
            logits = rng.standard_normal((steps, ITEMS, classes)).astype(dtype)
            targets = rng.integers(1, classes, (ITEMS, longest))
            input_lengths = rng.integers(steps * 3 // 4, steps + 1, ITEMS)
            target_lengths = rng.integers(longest // 2, longest + 1, ITEMS)
            calls = {
                lib: step_of(lib, logits, targets, input_lengths, target_lengths) for lib in (numdiff, torch)
            }
            times: dict = {numdiff: [], torch: []}
            for call in calls.values():
                call(), call()
            for _ in range(reps):
                for lib, call in calls.items():
                    start = time.thread_time()
                    call()
                    times[lib].append(time.thread_time() - start)
            ours, theirs = min(times[numdiff]), min(times[torch])
            print(
                f"T={steps:3d} N={ITEMS} C={classes:2d} S={longest:2d} {np.dtype(dtype).name:7s} "
                f"numdiff {ours * 1e3:7.3f} ms  torch {theirs * 1e3:7.3f} ms  ratio {ours / theirs:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
