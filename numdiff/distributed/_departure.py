"""How a rank that leaves the job makes the others fail within seconds, naming it.

MPI has no notion of a peer that went away: a collective that some rank will never join waits
forever (gloo notices a closed connection; MPI does not). So each rank posts, when the group
starts, one receive on a communicator of its own (the notices), from any rank. A rank that
leaves while the group is up sends every other rank a notice saying who left and how:

- it returned from its script or called ``sys.exit`` (an ``atexit`` handler);
- it was interrupted (``KeyboardInterrupt``, seen by the exception hook, then the same handler);
- it raised (the exception hook, which then aborts the whole job as before).

Every wait in a collective polls the notice along with the collective's own request. When a
notice arrives the collective gets a short grace period (the departed rank may have finished its
part just before leaving, with the data still in flight) and then `RankDepartedError` is raised,
naming the rank. ``init_process_group(timeout=...)`` stays the last resort, for a rank that is
alive but never calls the collective.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

_TAG = 7301
_MESSAGE_BYTES = 240
# How long a collective may still complete after a notice arrived, and how long a departing rank
# waits for its notices to leave (small messages: MPI sends them at once).
GRACE_SECONDS = 1.0
_SEND_SECONDS = 2.0


class Departures:
    """The notices of one process group: this rank's pending receive, and what it learnt."""

    def __init__(self, comm: Any, mpi: Any) -> None:
        self.comm = comm
        self.mpi = mpi
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._buffer = np.zeros(_MESSAGE_BYTES, dtype=np.uint8)
        self._request = comm.Irecv(self._buffer, source=mpi.ANY_SOURCE, tag=_TAG) if self.size > 1 else None
        self.notice: str | None = None
        self._announced = False

    def arrived(self) -> str | None:
        """The notice of a rank that left, if one has arrived (one MPI test when none has)."""
        if self.notice is None and self._request is not None and self._request.Test():
            self._request = None
            self.notice = bytes(self._buffer).rstrip(b"\0").decode("utf-8", "replace")
        return self.notice

    def announce(self, how: str) -> None:
        """Tell every other rank that this one is leaving, and `how` (once)."""
        if self._announced or self.size == 1:
            return
        self._announced = True
        text = f"rank {self.rank} of {self.size} left the job: {how}".encode()[:_MESSAGE_BYTES]
        message = np.zeros(_MESSAGE_BYTES, dtype=np.uint8)
        message[: len(text)] = np.frombuffer(text, dtype=np.uint8)
        try:
            sends = [self.comm.Isend(message, dest=r, tag=_TAG) for r in range(self.size) if r != self.rank]
            deadline = time.monotonic() + _SEND_SECONDS
            while not self.mpi.Request.Testall(sends) and time.monotonic() < deadline:
                time.sleep(1e-3)
        except self.mpi.Exception:
            pass  # a rank that already ended cannot be told; the others were

    def close(self) -> None:
        """Withdraw the pending receive, so MPI can shut down cleanly."""
        request, self._request = self._request, None
        if request is not None and not request.Test():
            try:
                request.Cancel()
                request.Wait()
            except self.mpi.Exception:
                pass
