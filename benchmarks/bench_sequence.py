"""Recurrent and attention layers, forward + backward, numdiff vs PyTorch (one thread each).

    python benchmarks/bench_sequence.py [--repeat 7]

The recurrent layers run each layer's sequence as one kernel op (numdiff.ops.recurrent) and
attention one fused op (numdiff.ops.attention); this measures them against PyTorch's fused CPU
cells and attention. float32, the same weights in both libraries, medians of alternating rounds
(numdiff.benchmark.compare). Run it on a quiet machine and quote `uptime` with the numbers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

# Run from a checkout without installing: the repository root holds the numdiff package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numdiff  # noqa: E402
from numdiff.benchmark import compare  # noqa: E402

CASES = {
    # name: (layer builder taking the library, input shape)
    "LSTM(32, 64) seq 20 batch 16": (lambda lib: lib.nn.LSTM(32, 64), (20, 16, 32)),
    "GRU(32, 64) seq 20 batch 16": (lambda lib: lib.nn.GRU(32, 64), (20, 16, 32)),
    "TransformerEncoderLayer(64, 4, 128) seq 32 batch 8": (
        lambda lib: lib.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True),
        (8, 32, 64),
    ),
}


def step(layer, x):
    def run():
        out = layer(x)
        out = out[0] if isinstance(out, tuple) else out
        out.sum().backward()

    return run


def main() -> None:
    import numba
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    numba.set_num_threads(1)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    print(f"{'layer':52s} {'numdiff':>10s} {'torch':>10s} {'ratio':>7s}")
    for name, (build, shape) in CASES.items():
        ours, theirs = build(numdiff), build(torch)
        ours.load_state_dict({k: numdiff.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
        x = rng.standard_normal(shape).astype(np.float32)
        table = compare(
            {"numdiff": step(ours, numdiff.tensor(x)), "torch": step(theirs, torch.tensor(x))},
            repeat=args.repeat,
            baseline="torch",
        )
        mine, reference = table.timings["numdiff"].median, table.timings["torch"].median
        print(f"{name:52s} {mine * 1e3:8.2f}ms {reference * 1e3:8.2f}ms {mine / reference:6.1f}x")


if __name__ == "__main__":
    main()
