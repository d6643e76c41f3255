"""Run every differential family of tests/ops/differential.py against torch and print each case where
numdiff disagrees, with the known differences too under --all (tests/ops/test_torch_differential.py
asserts none beyond those). A scratch driver, for a person to read the output:

    PYTHONPATH=. python3 tools/torch_differential.py [family ...] [--grep TEXT] [--random 20000 --seeds 0 1]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import torch

import numdiff

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from tests.ops.differential import FAMILIES, compare, permitted  # noqa: E402
from tests.ops.differential_layers import LAYER_FAMILIES  # noqa: E402
from tests.ops.differential_random import random_cases  # noqa: E402

FAMILIES = {**FAMILIES, **LAYER_FAMILIES}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("families", nargs="*", default=list(FAMILIES))
    parser.add_argument("--grep", default="")
    parser.add_argument("--all", action="store_true", help="also print the permitted differences")
    parser.add_argument("--random", type=int, default=0, help="also this many drawn cases per seed")
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3])
    args = parser.parse_args()
    families = {name: FAMILIES[name] for name in args.families}
    for seed in args.seeds if args.random else ():
        families[f"random seed {seed}"] = lambda seed=seed: random_cases(seed, args.random)
    for family, cases_of in families.items():
        start, cases, differ = time.process_time(), 0, 0
        for name, case in cases_of():
            if args.grep not in name:
                continue
            cases += 1
            difference = compare(case, torch, numdiff)
            if difference and (args.all or not permitted(name, difference)):
                differ += 1
                print(f"{family}: {name} :: {difference}")
        print(f"# {family}: {cases} cases, {differ} differ, {time.process_time() - start:.1f} s CPU")


if __name__ == "__main__":
    main()
