"""The process group: one MPI communicator shared by every rank of the job, and how a job fails.

numdiff runs on MPI (through mpi4py) rather than an engine of its own. `init_process_group`
duplicates ``MPI.COMM_WORLD`` so numdiff's collectives never mix with the user's own MPI traffic,
and installs an exception hook: an uncaught exception on one rank prints the rank and the error
and aborts the whole job, so the other ranks do not wait forever in their next collective. A rank
that leaves otherwise (returns, calls sys.exit, is interrupted) sends the others a departure
notice (numdiff/distributed/_departure.py), and their collectives raise `RankDepartedError`.
"""

from __future__ import annotations

import atexit
import datetime
import os
import sys
import threading
import time
import traceback
from typing import Any

from numdiff.distributed._backends import resolve_backend
from numdiff.distributed._departure import GRACE_SECONDS, Departures

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)

_INSTALL_HINT = (
    "numdiff.distributed needs mpi4py and an MPI library: install the extra with "
    "`pip install 'numdiff[distributed]'` (mpi4py with MPICH wheels), or mpi4py built against "
    "your system's MPI."
)


class DistributedError(RuntimeError):
    """A collective was misused, or the process group is not in the state the call needs."""


class DistributedTimeoutError(DistributedError, TimeoutError):
    """A collective did not complete within its timeout."""


class RankDepartedError(DistributedError):
    """Another rank left the job (returned, exited, raised or was interrupted) while this one
    waited in a collective that needs it."""


def mpi() -> Any:
    """The mpi4py ``MPI`` module, or an ImportError that says which extra to install."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise ImportError(_INSTALL_HINT) from error
    return MPI


class _ProcessGroup:
    """The state of an initialised group: its communicator, rank, size and default timeout."""

    def __init__(self, comm: Any, timeout: datetime.timedelta, backend: str = "mpi") -> None:
        self.comm = comm
        self.backend = backend
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout
        # SyncBatchNorm's collectives run on their own communicator: they are issued from inside
        # backward, while DDP's gradient buckets may still be in flight on `comm`.
        self.sync_comm = comm.Dup()
        # Departure notices travel on a communicator of their own, never mixed with collectives.
        self.departures = Departures(comm.Dup(), mpi())


_group: _ProcessGroup | None = None
_lock = threading.Lock()
_previous_excepthook = None
# How this rank is leaving, when the exception hook learnt it before the exit handler runs.
_leaving_because: str | None = None


def is_available() -> bool:
    """True if mpi4py imports, so `init_process_group(backend="mpi")` can run."""
    try:
        mpi()
    except ImportError:
        return False
    return True


def is_mpi_available() -> bool:
    """True if MPI, numdiff's transport for every backend name, can run."""
    return is_available()


def is_gloo_available() -> bool:
    """True if backend="gloo" can run: numdiff carries it on MPI, so this is `is_available()`."""
    return is_available()


def is_nccl_available() -> bool:
    """True if backend="nccl" can run: numdiff carries it on MPI, so this is `is_available()`."""
    return is_available()


def is_torchelastic_launched() -> bool:
    """True in a process started by `python -m numdiff.distributed.run` (or torchrun)."""
    return "TORCHELASTIC_RUN_ID" in os.environ


def init_process_group(
    backend: str | None = "mpi",
    init_method: str | None = None,
    timeout: datetime.timedelta | float | None = None,
    world_size: int = -1,
    rank: int = -1,
    **kwargs: Any,
) -> None:
    """Join the job's process group; ranks and the world size come from the MPI launcher.

    >>> import numdiff.distributed as dist
    >>> dist.init_process_group(backend="mpi")      # under `mpiexec -n 2 python train.py`
    >>> dist.get_rank(), dist.get_world_size()

    PyTorch's names "gloo" and "nccl" (and device maps like "cpu:gloo,cuda:nccl") are accepted
    and carried by MPI too; `get_backend()` returns the name given.

    `timeout` (a timedelta or seconds) bounds every collective unless a call passes its own.
    `world_size` and `rank`, if given, must agree with what MPI says.
    """
    global _group, _previous_excepthook
    backend = resolve_backend("init_process_group", backend)
    if init_method not in (None, "env://"):
        raise ValueError(
            f"init_process_group: init_method {init_method!r} is not used with the MPI backend: "
            "mpiexec starts the ranks and tells each its place"
        )
    timeout = _as_timedelta("init_process_group", timeout) or DEFAULT_TIMEOUT
    MPI = mpi()  # noqa: N806 - mpi4py's name
    with _lock:
        if _group is not None:
            raise DistributedError("init_process_group: the default process group is already initialized")
        group = _ProcessGroup(MPI.COMM_WORLD.Dup(), timeout, backend)
        for name, given, actual in (("world_size", world_size, group.size), ("rank", rank, group.rank)):
            if given not in (-1, None) and given != actual:
                raise ValueError(
                    f"init_process_group: {name}={given} disagrees with the MPI launcher, which "
                    f"gives {actual}"
                )
        _group = group
        if _previous_excepthook is None:
            _previous_excepthook = sys.excepthook
            sys.excepthook = _abort_job_on_exception
            atexit.register(_announce_departure)


def destroy_process_group(group: Any = None) -> None:
    """Leave the process group; collectives raise until `init_process_group` runs again."""
    global _group
    with _lock:
        if _group is None:
            raise DistributedError("destroy_process_group: no process group is initialized")
        _group.departures.close()
        _group.departures.comm.Free()
        _group.sync_comm.Free()
        _group.comm.Free()
        _group = None


def is_initialized() -> bool:
    return _group is not None


def get_backend(group: Any = None) -> str:
    """The backend name the group was started with ("mpi", "gloo", "nccl", ...); MPI carries each."""
    return current().backend


def get_rank(group: Any = None) -> int:
    """This process's rank, 0 to world_size - 1."""
    return current().rank


def get_world_size(group: Any = None) -> int:
    """The number of processes in the job."""
    return current().size


def current(op: str = "distributed") -> _ProcessGroup:
    if _group is None:
        raise DistributedError(
            f"{op}: the default process group has not been initialized; call "
            "numdiff.distributed.init_process_group(backend='mpi') first"
        )
    return _group


def _as_timedelta(op: str, timeout: Any) -> datetime.timedelta | None:
    if timeout is None or isinstance(timeout, datetime.timedelta):
        return timeout
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        return datetime.timedelta(seconds=float(timeout))
    raise ValueError(f"{op}: timeout must be a positive number of seconds or a timedelta, got {timeout!r}")


def _abort_job_on_exception(kind: type, value: BaseException, tb: Any) -> None:
    """sys.excepthook while a group is up: report which rank failed, then end every rank."""
    global _leaving_because
    group = _group
    if group is None or group.size == 1 or kind is KeyboardInterrupt:
        if group is not None and kind is KeyboardInterrupt:
            _leaving_because = "it was interrupted (KeyboardInterrupt)"
        (_previous_excepthook or sys.__excepthook__)(kind, value, tb)
        return
    group.departures.announce(f"it raised {kind.__name__}: {value}")
    text = "".join(traceback.format_exception(kind, value, tb))
    sys.stderr.write(
        f"numdiff.distributed: rank {group.rank} of {group.size} failed with "
        f"{kind.__name__}: {value}\n{text}aborting the job so the other ranks do not wait for it\n"
    )
    sys.stderr.flush()
    # mpiexec kills every rank as soon as the abort reaches it, and may do so before it has read this
    # rank's stderr pipe: the report would be lost (seen on a loaded CI machine). Give it a moment first.
    time.sleep(GRACE_SECONDS)
    mpi().COMM_WORLD.Abort(1)


def _announce_departure() -> None:
    """At exit, with the group still up: tell the other ranks this one is gone, and how."""
    group = _group
    if group is None:
        return
    how = _leaving_because or "it ended (returned from its script or called sys.exit)"
    group.departures.announce(how + " without destroy_process_group()")
    group.departures.close()
