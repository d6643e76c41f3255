"""Collectives over the process group, in place on tensors, with torch.distributed's names.

Every call hands MPI the tensor's own memory through the buffer protocol (no pickling). A tensor
that is not C-contiguous is reduced through a contiguous copy that is written back. CUDA tensors
are staged through host memory: numdiff does not assume a CUDA-aware MPI.

Each collective runs non-blocking (``MPI.Comm.Iallreduce`` and friends); with ``async_op=True``
the call returns a `Work` handle at once, otherwise it waits. Waiting polls the request, so a
collective that some rank never joins ends in `DistributedTimeoutError` after the timeout
instead of hanging.
"""

from __future__ import annotations

import datetime
import enum
import pickle
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numdiff.backend import is_host, like_host, to_host
from numdiff.distributed._departure import GRACE_SECONDS
from numdiff.distributed._group import (
    DistributedError,
    DistributedTimeoutError,
    RankDepartedError,
    _as_timedelta,
    current,
    mpi,
)
from numdiff.tensor import Tensor


class ReduceOp(enum.Enum):
    """How `all_reduce` and `reduce_scatter` combine the ranks' values."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"


def _mpi_op(op: ReduceOp) -> Any:
    MPI = mpi()  # noqa: N806 - mpi4py's name
    return {
        ReduceOp.SUM: MPI.SUM,
        ReduceOp.AVG: MPI.SUM,
        ReduceOp.PRODUCT: MPI.PROD,
        ReduceOp.MAX: MPI.MAX,
        ReduceOp.MIN: MPI.MIN,
    }[op]


_SPIN_SECONDS = 0.05


class Work:
    """A collective in flight: `wait()` blocks until it is done, then writes results back.

    >>> work = dist.all_reduce(t, async_op=True)
    >>> ...                      # compute while the reduction runs
    >>> work.wait()
    """

    def __init__(self, op: str, request: Any, timeout: datetime.timedelta, finish: Callable[[], None]) -> None:
        self._op = op
        self._request = request
        self._timeout = timeout
        self._finish = finish
        self._done = False

    def is_completed(self) -> bool:
        if not self._done and self._request.Test():
            self._complete()
        return self._done

    def wait(self, timeout: datetime.timedelta | float | None = None) -> bool:
        """Block until the collective finishes; raise DistributedTimeoutError after `timeout`."""
        if self._done:
            return True
        limit = (_as_timedelta(self._op, timeout) or self._timeout).total_seconds()
        start = time.monotonic()
        deadline = start + limit
        pause = 0.0
        departures = current(self._op).departures
        grace_end = None
        # MPI progresses a request only inside MPI calls, and a sleep costs at least a scheduler
        # tick: poll without sleeping for the first _SPIN_SECONDS (a training step's collectives
        # finish well within that), then back off to at most 1 ms between polls. Each poll also
        # looks for another rank's departure notice (see _departure.py).
        while not self._request.Test():
            now = time.monotonic()
            if departures.arrived() is not None:
                if grace_end is None:
                    grace_end = now + GRACE_SECONDS  # its part may still be in flight
                elif now > grace_end:
                    raise RankDepartedError(
                        f"{self._op}: {departures.notice}. Rank {departures.rank} was waiting for it "
                        "in this collective, which needs every rank, so it cannot complete."
                    )
            if now > deadline:
                raise DistributedTimeoutError(
                    f"{self._op}: rank {current().rank} waited {limit:g} s and the collective did "
                    "not complete; another rank has not joined it (it may have failed, or be "
                    "running a different collective)"
                )
            if now - start > _SPIN_SECONDS:
                time.sleep(pause)
                pause = min(1e-3, pause * 2 or 1e-5)
        self._complete()
        return True

    def _complete(self) -> None:
        self._done = True
        self._finish()


def _check_tensor(op: str, name: str, tensor: Any) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op}: {name} must be a numdiff Tensor, got {type(tensor).__name__}")


def _send_buffer(tensor: Tensor) -> np.ndarray:
    """A C-contiguous host array with `tensor`'s values, only read by the collective."""
    data = tensor._data
    return np.ascontiguousarray(to_host(data))


def _staging(op: str, tensor: Tensor) -> tuple[np.ndarray, Callable[[np.ndarray], None]]:
    """A C-contiguous host buffer holding `tensor`'s values, and how to write results back."""
    data = tensor._data
    if is_host(data):
        if data.flags.c_contiguous and data.flags.writeable:
            return data, lambda buf: None
        if not data.flags.writeable:
            raise ValueError(f"{op}: the tensor of shape {tuple(tensor.shape)} is read-only")
        buffer = np.ascontiguousarray(data)

        def write_back(buf: np.ndarray) -> None:
            data[...] = buf

        return buffer, write_back
    host = np.ascontiguousarray(np.asarray(to_host(data)))

    def upload(buf: np.ndarray) -> None:
        data[...] = like_host(buf, data)

    return host, upload


def _bump_version(tensor: Tensor) -> None:
    tensor._version_counter[0] += 1


def _timeout(op: str, timeout: Any) -> datetime.timedelta:
    return _as_timedelta(op, timeout) or current(op).timeout


def wait_for(op: str, request: Any, timeout: Any = None) -> None:
    """Block on an MPI request as a collective does: bounded by the timeout, and ended by another
    rank's departure. For the collectives numdiff issues itself (DDP, SyncBatchNorm)."""
    Work(op, request, _timeout(op, timeout), lambda: None).wait()


def _run(op: str, request: Any, finish: Callable[[], None], async_op: bool, timeout: Any) -> Work | None:
    work = Work(op, request, _timeout(op, timeout), finish)
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(
    tensor: Tensor,
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
    timeout: Any = None,
) -> Work | None:
    """Combine `tensor` across all ranks with `op`, in place on every rank.

    >>> t = numdiff.tensor([float(dist.get_rank())])
    >>> dist.all_reduce(t, op=dist.ReduceOp.SUM)     # every rank now holds 0 + 1 + ... + (n-1)
    """
    name = "all_reduce"
    pg = current(name)
    _check_tensor(name, "tensor", tensor)
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a numdiff.distributed.ReduceOp, got {op!r}")
    if op is ReduceOp.AVG and tensor._data.dtype.kind not in "fc":
        raise TypeError(f"{name}: ReduceOp.AVG needs a floating-point tensor, got {tensor.dtype}")
    buffer, write_back = _staging(name, tensor)
    request = pg.comm.Iallreduce(mpi().IN_PLACE, buffer, _mpi_op(op))

    def finish() -> None:
        if op is ReduceOp.AVG:
            np.divide(buffer, pg.size, out=buffer)
        write_back(buffer)
        _bump_version(tensor)

    return _run(name, request, finish, async_op, timeout)


def broadcast(tensor: Tensor, src: int, group: Any = None, async_op: bool = False, timeout: Any = None) -> Work | None:
    """Copy rank `src`'s `tensor` into `tensor` on every other rank."""
    name = "broadcast"
    pg = current(name)
    _check_tensor(name, "tensor", tensor)
    _check_rank(name, "src", src, pg.size)
    buffer, write_back = _staging(name, tensor)
    request = pg.comm.Ibcast(buffer, root=src)

    def finish() -> None:
        if pg.rank != src:
            write_back(buffer)
            _bump_version(tensor)

    return _run(name, request, finish, async_op, timeout)


def all_gather(
    tensor_list: Sequence[Tensor], tensor: Tensor, group: Any = None, async_op: bool = False, timeout: Any = None
) -> Work | None:
    """Fill ``tensor_list[r]`` with rank r's `tensor`, on every rank."""
    name = "all_gather"
    pg = current(name)
    _check_tensor(name, "tensor", tensor)
    outputs = _check_list(name, "tensor_list", tensor_list, tensor, pg.size)
    send = _send_buffer(tensor)
    gathered = np.empty((pg.size,) + send.shape, dtype=send.dtype)
    request = pg.comm.Iallgather(send, gathered)

    def finish() -> None:
        for out, part in zip(outputs, gathered):
            out_buffer, write_back = _staging(name, out)
            out_buffer[...] = part
            write_back(out_buffer)
            _bump_version(out)

    return _run(name, request, finish, async_op, timeout)


def reduce_scatter(
    output: Tensor,
    input_list: Sequence[Tensor],
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
    timeout: Any = None,
) -> Work | None:
    """Reduce ``input_list[r]`` across ranks with `op` and leave the result in `output` on rank r."""
    name = "reduce_scatter"
    pg = current(name)
    _check_tensor(name, "output", output)
    inputs = _check_list(name, "input_list", input_list, output, pg.size)
    if op is ReduceOp.AVG and output._data.dtype.kind not in "fc":
        raise TypeError(f"{name}: ReduceOp.AVG needs a floating-point tensor, got {output.dtype}")
    send = np.stack([_send_buffer(t) for t in inputs])
    result, write_back = _staging(name, output)
    request = pg.comm.Ireduce_scatter_block(send, result, _mpi_op(op))

    def finish() -> None:
        if op is ReduceOp.AVG:
            np.divide(result, pg.size, out=result)
        write_back(result)
        _bump_version(output)

    return _run(name, request, finish, async_op, timeout)


def reduce(
    tensor: Tensor,
    dst: int,
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
    timeout: Any = None,
) -> Work | None:
    """Combine `tensor` across all ranks with `op` into `tensor` on rank `dst` (the others' keep
    their values).

    >>> dist.reduce(t, dst=0)                         # rank 0 now holds the sum
    """
    name = "reduce"
    pg = current(name)
    _check_tensor(name, "tensor", tensor)
    _check_rank(name, "dst", dst, pg.size)
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a numdiff.distributed.ReduceOp, got {op!r}")
    if op is ReduceOp.AVG and tensor._data.dtype.kind not in "fc":
        raise TypeError(f"{name}: ReduceOp.AVG needs a floating-point tensor, got {tensor.dtype}")
    if pg.rank == dst:
        buffer, write_back = _staging(name, tensor)
        request = pg.comm.Ireduce(mpi().IN_PLACE, buffer, _mpi_op(op), root=dst)
    else:
        buffer, write_back = _send_buffer(tensor), None
        request = pg.comm.Ireduce(buffer, None, _mpi_op(op), root=dst)

    def finish() -> None:
        if write_back is None:
            return
        if op is ReduceOp.AVG:
            np.divide(buffer, pg.size, out=buffer)
        write_back(buffer)
        _bump_version(tensor)

    return _run(name, request, finish, async_op, timeout)


def barrier(group: Any = None, async_op: bool = False, timeout: Any = None) -> Work | None:
    """Wait until every rank has reached this call."""
    name = "barrier"
    pg = current(name)
    return _run(name, pg.comm.Ibarrier(), lambda: None, async_op, timeout)


def _check_rank(op: str, name: str, rank: Any, size: int) -> None:
    if not isinstance(rank, (int, np.integer)) or isinstance(rank, bool) or not 0 <= rank < size:
        raise ValueError(f"{op}: {name} must be a rank in [0, {size}), got {rank!r}")


def _check_list(op: str, name: str, tensors: Sequence[Tensor], like: Tensor, size: int) -> list[Tensor]:
    tensors = list(tensors)
    if len(tensors) != size:
        raise ValueError(f"{op}: {name} must hold one tensor per rank ({size}), got {len(tensors)}")
    for i, t in enumerate(tensors):
        _check_tensor(op, f"{name}[{i}]", t)
        if tuple(t.shape) != tuple(like.shape) or t._data.dtype != like._data.dtype:
            raise ValueError(
                f"{op}: {name}[{i}] has shape {tuple(t.shape)} and dtype {t.dtype}, expected shape "
                f"{tuple(like.shape)} and dtype {like.dtype} like the tensor on this rank"
            )
    return tensors


def check_same_across_ranks(op: str, what: str, items: list[tuple]) -> None:
    """Raise on every rank if `items` (small metadata rows) differ from rank 0's.

    Used by DistributedDataParallel to refuse models that disagree between ranks; the rows are
    compared after an allgather, so every rank sees the same first mismatch and raises together.
    """
    pg = current(op)
    everyone = _allgather_objects(op, pg, items)
    reference = everyone[0]
    for rank, rows in enumerate(everyone[1:], start=1):
        for index in range(max(len(rows), len(reference))):
            mine = rows[index] if index < len(rows) else None
            theirs = reference[index] if index < len(reference) else None
            if mine != theirs:
                raise DistributedError(
                    f"{op}: the ranks disagree on the {what}: at position {index}, rank {rank} has "
                    f"{_describe(mine)} where rank 0 has {_describe(theirs)}. Every rank must build "
                    "the same model."
                )


def _allgather_objects(op: str, pg: Any, item: Any) -> list:
    """Every rank's `item` (small, picklable), through non-blocking collectives."""
    payload = np.frombuffer(pickle.dumps(item), dtype=np.uint8)
    lengths = np.zeros(pg.size, dtype=np.int64)
    wait_for(op, pg.comm.Iallgather(np.array([payload.size], dtype=np.int64), lengths))
    gathered = np.empty(int(lengths.sum()), dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    wait_for(op, pg.comm.Iallgatherv(payload, [gathered, lengths, offsets, mpi().BYTE]))
    return [pickle.loads(gathered[o : o + n].tobytes()) for o, n in zip(offsets, lengths)]


def _describe(row: tuple | None) -> str:
    if row is None:
        return "nothing"
    name, shape, dtype = row
    return f"{name!r} of shape {shape} and dtype {dtype}"


__all__ = [
    "ReduceOp",
    "Work",
    "all_gather",
    "all_reduce",
    "barrier",
    "broadcast",
    "reduce",
    "reduce_scatter",
    "DistributedError",
    "DistributedTimeoutError",
    "RankDepartedError",
]
