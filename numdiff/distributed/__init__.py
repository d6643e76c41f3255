"""numdiff.distributed: data-parallel collectives on MPI, with torch.distributed's names.

Start one process per rank with MPI's launcher; each joins the group and calls the same
collectives in the same order:

    mpiexec -n 2 python train.py

>>> import numdiff, numdiff.distributed as dist
>>> dist.init_process_group(backend="mpi")
>>> t = numdiff.ones(3) * dist.get_rank()
>>> dist.all_reduce(t)                              # in place: the sum over ranks
>>> work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True); work.wait()

Install with ``pip install 'numdiff[distributed]'`` (mpi4py and MPICH wheels, which bring
``mpiexec``); mpi4py built against a system MPI works too.
"""

from numdiff.distributed import nn
from numdiff.distributed._backends import Backend, get_default_backend_for_device
from numdiff.distributed._group import (
    DistributedError,
    DistributedTimeoutError,
    RankDepartedError,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
)
from numdiff.distributed.collectives import (
    ReduceOp,
    Work,
    all_gather,
    all_reduce,
    barrier,
    broadcast,
    reduce,
    reduce_scatter,
)

__all__ = [
    "Backend",
    "DistributedError",
    "DistributedTimeoutError",
    "RankDepartedError",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_reduce",
    "barrier",
    "broadcast",
    "destroy_process_group",
    "get_backend",
    "get_default_backend_for_device",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_available",
    "is_gloo_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "is_torchelastic_launched",
    "nn",
    "reduce",
    "reduce_scatter",
]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
