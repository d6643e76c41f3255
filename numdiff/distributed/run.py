"""`python -m numdiff.distributed.run`: torchrun's command line, starting the ranks with mpiexec.

PyTorch programs written for torchrun read their place from the environment (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT). This launcher takes torchrun's
arguments, starts `--nproc-per-node` ranks with mpiexec, and in each rank sets those variables
from MPI before running the script, so such a program runs unchanged:

    python -m numdiff.distributed.run --nproc-per-node 2 train.py --epochs 1

Several machines are MPI's business (a hosts file given to mpiexec), so `--nnodes` above 1 is
refused with that advice rather than silently run on one node.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys


def parse_args(argv: list[str]) -> argparse.Namespace:
    """torchrun's arguments that mean something on one node; unknown options are refused."""
    parser = argparse.ArgumentParser(
        prog="python -m numdiff.distributed.run",
        description="Start a PyTorch-style distributed script on N local ranks through mpiexec.",
    )
    for flag in ("--nproc-per-node", "--nproc_per_node"):
        parser.add_argument(flag, dest="nproc_per_node", default="1", help="ranks to start (an int, or 'cpu'/'auto')")
    for flag in ("--nnodes",):
        parser.add_argument(flag, dest="nnodes", default="1", help="must be 1: use mpiexec's hosts file for more")
    for flag in ("--master-addr", "--master_addr"):
        parser.add_argument(flag, dest="master_addr", default="127.0.0.1")
    for flag in ("--master-port", "--master_port"):
        parser.add_argument(flag, dest="master_port", type=int, default=29500)
    parser.add_argument("--standalone", action="store_true", help="accepted: one node is always standalone")
    parser.add_argument("-m", "--module", action="store_true", help="run the script argument as a module")
    parser.add_argument("training_script")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    args.nproc_per_node = _ranks(args.nproc_per_node)
    if str(args.nnodes) not in ("1", "1:1"):
        raise SystemExit(
            f"numdiff.distributed.run: --nnodes {args.nnodes} is not supported; for several machines "
            "start the job with `mpiexec -f hosts -n N python train.py` (MPI places the ranks)"
        )
    return args


def _ranks(value: str) -> int:
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    try:
        ranks = int(value)
    except ValueError:
        ranks = 0
    if ranks < 1:
        raise SystemExit(
            f"numdiff.distributed.run: --nproc-per-node must be a positive integer, 'cpu' or 'auto', got {value!r}"
        )
    return ranks


def command(args: argparse.Namespace, mpiexec: str) -> list[str]:
    """The mpiexec command line that starts every rank through numdiff.distributed._launched."""
    target = ["-m", args.training_script] if args.module else [args.training_script]
    return [mpiexec, "-n", str(args.nproc_per_node), sys.executable, "-m", "numdiff.distributed._launched",
            *target, *args.training_script_args]


def main(argv: list[str] | None = None) -> int:
    """Parse torchrun's arguments, start the ranks, and return the job's exit status."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        raise SystemExit(
            "numdiff.distributed.run: mpiexec not found; install the extra with "
            "`pip install 'numdiff[distributed]'` (mpi4py with MPICH wheels)"
        )
    env = dict(os.environ, MASTER_ADDR=args.master_addr, MASTER_PORT=str(args.master_port))
    return subprocess.run(command(args, mpiexec), env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
