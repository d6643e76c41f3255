"""The one switch Module.__call__ reads for numdiff.fx: `tracing` is 0 unless a symbolic trace runs.

While ``numdiff.fx.Tracer.trace`` runs in a thread, `current()` is that Tracer in that thread, and
every Module call there goes to its ``call_module`` (which records a leaf module as one Node, or
traces through the module's forward). Other threads keep calling modules as usual. Outside a
trace, one module-attribute read per Module call, as for numdiff._profiling. Kept at the bottom
layer so numdiff.nn can read it without importing numdiff.fx.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

tracing = 0  # how many traces run, in any thread: the cheap first test
_local = threading.local()
_count_lock = threading.Lock()


def current() -> Any:
    """The Tracer tracing in this thread, or None."""
    return getattr(_local, "tracer", None)


@contextmanager
def active(tracer: Any) -> Iterator[None]:
    """Make `tracer` this thread's tracer for the block; nested traces are refused."""
    global tracing
    if current() is not None:
        raise RuntimeError("numdiff.fx: a trace is already running in this thread; trace one module at a time")
    _local.tracer = tracer
    with _count_lock:
        tracing += 1
    try:
        yield
    finally:
        with _count_lock:
            tracing -= 1
        _local.tracer = None
