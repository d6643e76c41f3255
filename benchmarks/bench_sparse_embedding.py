"""word2vec skip-gram training step with sparse embedding gradients, numdiff against PyTorch.

Vocabulary 10000, dim 128, batch 256 centre words, 2 x 2 context words and 5 negatives each; two
``nn.Embedding(sparse=True)`` tables, loss ``-logsigmoid(pos) - logsigmoid(-neg)``, then the
optimizer's step: SparseAdam, SGD (momentum 0.9), Adagrad, and dense Adam (sparse=False) for
reference. One process, one thread, thread CPU time, numdiff and PyTorch alternating rep by rep
(5 steps a rep), the minimum over REPS reps (default 15) after 5 warm-up steps.

    python3 benchmarks/bench_sparse_embedding.py [REPS]
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
VOCAB, DIM, BATCH, NEGATIVES, WINDOW = 10000, 128, 256, 5, 2
OPTIMIZERS = [("SparseAdam", {"lr": 1e-3}), ("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adagrad", {"lr": 0.1}),
              ("Adam", {"lr": 1e-3})]


def step_of(lib, optimizer_name: str, options: dict, batches: list):
    """A closure running one training step of the skip-gram model in `lib` (numdiff or torch)."""
    sparse = optimizer_name != "Adam"
    centre_table = lib.nn.Embedding(VOCAB, DIM, sparse=sparse)
    context_table = lib.nn.Embedding(VOCAB, DIM, sparse=sparse)
    optimizer = getattr(lib.optim, optimizer_name)([*centre_table.parameters(), *context_table.parameters()], **options)
    tensors = [tuple(lib.tensor(a) for a in batch) for batch in batches]
    logsigmoid = lib.nn.functional.logsigmoid
    count = [0]

    def step() -> None:
        centre, context, negatives = tensors[count[0] % len(tensors)]
        count[0] += 1
        optimizer.zero_grad()
        v = centre_table(centre)
        positive = (context_table(context) * v.unsqueeze(1)).sum(-1)
        negative = lib.bmm(context_table(negatives), v.unsqueeze(2)).squeeze(2)
        (-(logsigmoid(positive).sum(1) + logsigmoid(-negative).sum(1)).mean()).backward()
        optimizer.step()

    return step


def main(reps: int) -> None:
    rng = np.random.default_rng(0)
    batches = [
        (rng.integers(0, VOCAB, BATCH), rng.integers(0, VOCAB, (BATCH, 2 * WINDOW)), rng.integers(0, VOCAB, (BATCH, NEGATIVES)))
        for _ in range(8)
    ]
    print("| optimizer | numdiff ms | torch ms | numdiff / torch |")
    print("|---|---|---|---|")
    for name, options in OPTIMIZERS:
        steps = {lib: step_of(lib, name, options, batches) for lib in (numdiff, torch)}
        times: dict = {lib: [] for lib in steps}
        for step in steps.values():
            for _ in range(5):
                step()
        for _ in range(reps):
            for lib, step in steps.items():
                start = time.thread_time()
                for _ in range(5):
                    step()
                times[lib].append((time.thread_time() - start) / 5)
        ours, theirs = min(times[numdiff]), min(times[torch])
        label = name if name != "Adam" else "Adam (dense grads)"
        print(f"| {label} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} | {ours / theirs:.2f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
