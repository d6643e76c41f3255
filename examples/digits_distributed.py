"""The digits CNN trained data-parallel: `mpiexec -n 2 python examples/train_digits.py --distributed`.

Every rank builds the same model (DistributedDataParallel copies rank 0's weights to the others),
reads its own share of each epoch through a DistributedSampler, and averages gradients during
backward. The global batch is `--batch-size`, split evenly over the ranks, so the run sees the
same number of samples per step as a single process. Rank 0 alone prints the progress bar, the
accuracy and the timings, and writes the checkpoint; every rank can load it.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np

import numdiff
import numdiff.distributed as dist
from numdiff.nn.parallel import DistributedDataParallel
from numdiff.utils.data import DataLoader, TensorDataset
from numdiff.utils.data.distributed import DistributedSampler


def run_distributed(args: argparse.Namespace, load_data: Any, build_model: Any) -> dict[str, Any]:
    """Train on this rank's shards; return rank 0's view of the results (every rank gets them)."""
    import numba
    from tqdm import tqdm

    dist.init_process_group(backend="mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    # Ranks share the machine's cores: by default each takes its share instead of all of them.
    numba.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) // world))
    if args.batch_size % world:
        raise ValueError(f"--batch-size {args.batch_size} must be a multiple of the {world} ranks")
    x_train, y_train, x_test, y_test = load_data(args.seed, args.limit)
    numdiff.manual_seed(args.seed)
    model = DistributedDataParallel(build_model(numdiff))
    optimizer = numdiff.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = numdiff.nn.CrossEntropyLoss()
    dataset = TensorDataset(numdiff.from_numpy(x_train), numdiff.from_numpy(y_train))
    sampler = DistributedSampler(dataset, shuffle=True, seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size // world, sampler=sampler)
    epoch_times = []
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        model.train()
        start = time.perf_counter()
        bar = tqdm(loader, desc=f"[numdiff x{world}] epoch {epoch}/{args.epochs}", disable=rank != 0)
        totals = numdiff.zeros(3, dtype=numdiff.float64)  # loss sum, correct, seen
        for xb, yb in bar:
            optimizer.zero_grad()
            logits = model(xb)
            loss = loss_fn(logits, yb)
            loss.backward()
            optimizer.step()
            totals += numdiff.tensor(
                [loss.item() * len(yb), float((logits.argmax(dim=1) == yb).sum().item()), float(len(yb))],
                dtype=numdiff.float64,
            )
        dist.all_reduce(totals)
        epoch_times.append(time.perf_counter() - start)
        loss_sum, correct, seen = totals.tolist()
        if rank == 0:
            print(f"epoch {epoch}: loss {loss_sum / seen:.4f}, train accuracy {correct / seen:.4f}")
    model.eval()
    with numdiff.no_grad():
        predicted = model(numdiff.from_numpy(x_test)).argmax(dim=1).numpy()
    accuracy = float((predicted == y_test).mean())
    if args.save:
        if rank == 0:  # one writer; the barrier keeps the others from reading a half-written file
            numdiff.save({"model": model.module.state_dict(), "epochs": args.epochs}, args.save)
        dist.barrier()
        model.module.load_state_dict(numdiff.load(args.save)["model"])
    steady = epoch_times[1:] if len(epoch_times) > 1 else epoch_times
    if rank == 0:
        print(
            f"numdiff on {world} ranks: test accuracy {accuracy:.4f} | epoch times "
            f"[{', '.join(f'{t:.2f}' for t in epoch_times)}] s | steady epoch median "
            f"{float(np.median(steady)):.3f} s | time waiting for all-reduce in backward "
            f"{model.comm_wait_seconds:.3f} s"
        )
    dist.destroy_process_group()
    return {"test_accuracy": accuracy, "epoch_times_s": epoch_times, "world_size": world}
