"""Run drawn calls of torch.nn.functional (tests/ops/differential_functional.py) under numdiff and
torch and print each one where they differ: values, dtypes, shapes, or one raising where the other
does not, or numdiff crashing with an exception users do not catch. A driver for a person to read:

    PYTHONPATH=. python3 tools/torch_functional_differential.py --count 5000 --seeds 0 1 [--family pooling] [--grep TEXT] [--names]
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import time

import torch

import numdiff

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from tests.ops.differential import outcome  # noqa: E402
from tests.ops.differential_functional import agree, functional_cases  # noqa: E402
from tests.ops.differential_functional_losses import LOSS_DRAWS  # noqa: E402
from tests.ops.differential_functional_windows import WINDOW_DRAWS  # noqa: E402

DRAWS = {**LOSS_DRAWS, **WINDOW_DRAWS}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=2000, help="cases per seed")
    parser.add_argument("--seeds", type=int, nargs="*", default=[0])
    parser.add_argument("--family", nargs="*", default=sorted(DRAWS))
    parser.add_argument("--grep", default="")
    parser.add_argument("--trace", action="store_true", help="print each case before it runs (to name a crash)")
    parser.add_argument("--names", action="store_true", help="also print numdiff's errors that do not name the op")
    args = parser.parse_args()
    families = {name: DRAWS[name] for name in args.family}
    calls, differ = collections.Counter(), collections.Counter()
    start = time.process_time()
    for seed in args.seeds:
        for name, case in functional_cases(seed, args.count, families):
            if args.grep not in name:
                continue
            family = name.split(" ", 1)[1].split(":", 1)[0]
            calls[family] += 1
            if args.trace:
                print(f"> {name}", file=sys.stderr, flush=True)
            difference = agree(case, torch, numdiff)
            if difference:
                differ[family] += 1
                print(f"{name} :: {difference}", flush=True)
            elif args.names:
                op = name.split(": ", 1)[1].split("[", 1)[0].split(" ", 1)[0]
                got = outcome(numdiff, case)
                if got[0] == "raised" and op not in got[1]:
                    print(f"{name} :: numdiff's error does not name {op}: {got[1]}", flush=True)
    for family in sorted(calls):
        print(f"# {family}: {calls[family]} calls, {differ[family]} differ")
    print(f"# {sum(calls.values())} calls, {sum(differ.values())} differ, {time.process_time() - start:.1f} s CPU")


if __name__ == "__main__":
    main()
