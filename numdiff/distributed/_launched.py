"""One rank of a `numdiff.distributed.run` job: set torchrun's variables from MPI, run the script.

    python -m numdiff.distributed._launched SCRIPT ARGS...    (or -m MODULE ARGS...)

LOCAL_RANK and LOCAL_WORLD_SIZE count the ranks that share this machine (MPI's shared-memory
split), so they are right under a multi-machine mpiexec too.
"""

from __future__ import annotations

import os
import runpy
import sys

from numdiff.distributed._group import mpi


def torchrun_environment() -> dict[str, str]:
    """RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK and TORCHELASTIC_RUN_ID from MPI."""
    MPI = mpi()  # noqa: N806 - mpi4py's name
    world = MPI.COMM_WORLD
    local = world.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return {
            "RANK": str(world.Get_rank()),
            "WORLD_SIZE": str(world.Get_size()),
            "LOCAL_RANK": str(local.Get_rank()),
            "LOCAL_WORLD_SIZE": str(local.Get_size()),
            "GROUP_RANK": "0",
            "TORCHELASTIC_RUN_ID": "numdiff-mpi",
            "MASTER_ADDR": os.environ.get("MASTER_ADDR", "127.0.0.1"),
            "MASTER_PORT": os.environ.get("MASTER_PORT", "29500"),
        }
    finally:
        local.Free()


def main(argv: list[str]) -> None:
    """Run `argv` (a script path and its arguments, or -m MODULE and its arguments) as __main__."""
    if not argv or argv[0] == "-m" and len(argv) < 2:
        raise SystemExit("numdiff.distributed._launched: give a script (or -m MODULE) to run")
    os.environ.update(torchrun_environment())
    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
