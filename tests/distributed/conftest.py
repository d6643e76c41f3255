"""tests/distributed runs in two ways.

- ``test_mpi_*.py`` need several ranks: .ci/run starts them as their own pytest invocations,
  ``mpiexec -n 2 python3 -m pytest tests/distributed`` (and ``-n 3``). Every rank runs every test,
  so each test makes the same collectives in the same order on all ranks.
- ``test_local_*.py`` run in the ordinary single-process suite (the sampler, and jobs that a test
  launches with mpiexec itself, such as a rank that fails mid-step).
"""

import os

import pytest

pytest.importorskip("mpi4py")


def _world_size() -> int:
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"):
        if name in os.environ:
            return int(os.environ[name])
    return 1


UNDER_MPI = _world_size() > 1
collect_ignore_glob = ["test_local_*.py"] if UNDER_MPI else ["test_mpi_*.py"]


@pytest.fixture(scope="session")
def dist():
    import numdiff.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group(backend="mpi", timeout=120)
    return dist
