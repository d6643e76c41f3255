"""Parallel builds compiled by a helper process while their serial twins serve the first calls.

A ``parallel=True`` build is the slowest thing numdiff compiles: Numba turns the ``prange`` loop
into a gufunc and emits the machine code of every function it calls once more for it, 2-3 s for
one convolution core. At two threads a small CNN's first training step needs both kinds (serial
builds for the small layers, parallel ones for the large), and with an empty cache it took
19-23 s, against 7-8 s at one thread, where only serial builds are needed.

Every parallel build here has a twin that computes the same result on the calling thread: a
:class:`~numdiff.kernels._parallel.KernelPair`'s serial build is the same loop nest with ``prange``
run as ``range``, and :func:`numdiff.kernels.matmul._bgemm`'s is ``gemm_batch``. So a call need not
wait. When a parallel build is called with argument types it has no machine code for, and the
disk cache has none either, the call runs the twin and asks a helper process
(a Python process running :func:`_serve`) to compile the parallel build into the disk cache,
which the two processes share. Once the helper reports it done, the next call loads it from disk
(milliseconds), and Numba dispatches to it directly from then on. On a two-core machine the
helper compiles on the core the foreground compilation leaves free.

Results never depend on this: the twin and the parallel build run the same loop nest over the
same parts. numdiff compiles in the foreground instead, as plain Numba would, when:

- ``NUMDIFF_BACKGROUND_COMPILE=0`` is set (read at import; the tests set it, so that a test of a
  parallel build runs that build);
- inside :func:`foreground` (``numdiff.kernels.compile_all`` warms every build that way);
- the build has no disk cache, or the helper failed, could not start, or compiled without leaving
  a cache entry (an unwritable cache folder).

The helper serves one process. When that process exits, the helper finishes the builds it was
asked for (so the next process finds them in the cache) and then exits too.
"""

from __future__ import annotations

import atexit
import base64
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from numba.core.caching import NullCache

__all__ = ["defer_to_helper", "foreground", "helper_requests", "settle"]

_ENABLED = os.environ.get("NUMDIFF_BACKGROUND_COMPILE", "1") != "0"
_state: dict[str, Any] = {"foreground": 0, "helper": None}
_lock = threading.Lock()

_REGISTRY: dict[tuple[str, str], Any] = {}
"""(module, qualified name) -> parallel dispatcher, for the helper to find what it is asked for."""

_requests: dict[tuple[str, str, Any], str] = {}
"""(module, qualified name, argument types) -> "pending", "done" or "failed"."""


def helper_requests() -> dict[tuple[str, str, Any], str]:
    """A copy of the builds asked of the helper process in this process, with their state."""
    with _lock:
        return dict(_requests)


def settle(step: Callable[[], Any], asked_before: int = 0, timeout_s: float = 300.0) -> None:
    """Call `step` until no parallel build it needs is left compiling in the helper process.

    Until the helper delivers, calls run the serial twins while the helper compiles on the other
    core, so a timing taken then times neither. `asked_before` is ``len(helper_requests())``
    before the calls that may have asked: with nothing asked since, `step` is not called. Each call
    may meet new argument types and ask again, so this steps until a call asks for nothing new (or
    `timeout_s` has passed). Timing harnesses call it after their warm-up (numdiff.benchmark,
    benchmarks/_isolated.py)."""
    deadline = time.monotonic() + timeout_s
    while len(helper_requests()) > asked_before and time.monotonic() < deadline:
        asked_before = len(helper_requests())
        while "pending" in helper_requests().values() and time.monotonic() < deadline:
            time.sleep(0.05)
        step()  # loads what the helper left in the disk cache; a new signature asks again


@contextmanager
def foreground() -> Iterator[None]:
    """Compile every parallel build called in this block in this process, before it runs."""
    with _lock:
        _state["foreground"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["foreground"] -= 1


def defer_to_helper(dispatcher: Any, twin: Callable[..., Any]) -> None:
    """Let `dispatcher` (a cached ``parallel=True`` build) run `twin` with the same arguments
    while a helper process compiles it for a new argument signature (see the module docstring).

    `twin` must compute exactly what `dispatcher` computes from the same arguments.
    """
    key = (dispatcher.py_func.__module__, dispatcher.py_func.__qualname__)
    _REGISTRY[key] = dispatcher
    compile_here = dispatcher._compile_for_args

    def compile_for_args(*args: Any, **kws: Any) -> Any:
        # Numba calls this when no compiled overload matches the arguments' types, and then calls
        # what it returns with the same arguments.
        if kws or not _ENABLED or _state["foreground"] or isinstance(dispatcher._cache, NullCache):
            return compile_here(*args, **kws)
        try:
            signature = tuple(dispatcher.typeof_pyval(a) for a in args)
        except Exception:  # an argument Numba cannot type: its own path says so
            return compile_here(*args)
        request = (*key, signature)
        with _lock:
            status = _requests.get(request)
            if status is None:
                if _cached_on_disk(dispatcher, signature) or not _ask_helper(request):
                    status = "done"  # load the cache entry (or compile) below
                else:
                    status = _requests[request] = "pending"
        if status == "pending":
            return twin
        # Done: Numba's own path finds the helper's entry in the disk cache and loads it; failed:
        # it compiles here.
        return compile_here(*args)

    dispatcher._compile_for_args = compile_for_args


def _cached_on_disk(dispatcher: Any, signature: tuple) -> bool:
    cache = dispatcher._cache
    try:
        index = cache._cache_file._load_index()
        return cache._index_key(signature, dispatcher.targetctx.codegen()) in index
    except Exception:  # no index yet, or one Numba cannot read: treat as absent
        return False


def _ask_helper(request: tuple) -> bool:
    """Send `request` to the helper process (started on first use); False if it cannot run."""
    helper = _state["helper"]
    if helper is None or helper.process.poll() is not None:
        try:
            helper = _state["helper"] = _Helper()
        except OSError:
            return False
    try:
        helper.send(request)
    except OSError:
        return False
    return True


def _forget_helper_in_child() -> None:
    # A forked child shares the parent's pipes but not its reader thread: it starts its own helper
    # and asks again for what the parent's helper had not delivered.
    _state["helper"] = None
    for request, status in list(_requests.items()):
        if status == "pending":
            del _requests[request]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helper_in_child)


class _Helper:
    """The helper process and the thread that reads its replies."""

    def __init__(self) -> None:
        env = dict(os.environ, NUMDIFF_BACKGROUND_COMPILE="0")
        # The helper imports this very numdiff (the same files are the disk cache's key), whatever
        # sys.path or working directory the helper would otherwise start from.
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        start = f"import sys; sys.path.insert(0, {root!r}); from numdiff.kernels import _background; _background._serve()"
        self.process = subprocess.Popen(
            [sys.executable, "-c", start],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.sent: list[tuple] = []
        threading.Thread(target=self._read_replies, name="numdiff-compile-helper", daemon=True).start()
        atexit.register(self.close)

    def send(self, request: tuple) -> None:
        self.sent.append(request)
        line = base64.b64encode(pickle.dumps(request)) + b"\n"
        self.process.stdin.write(line)
        self.process.stdin.flush()

    def _read_replies(self) -> None:
        # One reply line per request, in order: "ok" or "failed".
        for number, line in enumerate(self.process.stdout):
            with _lock:
                _requests[self.sent[number]] = "done" if line.strip() == b"ok" else "failed"
        with _lock:  # the helper exited: whatever it still owed is compiled here when next called
            for request in self.sent:
                if _requests.get(request) == "pending":
                    _requests[request] = "failed"

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass


def _serve() -> None:
    """The helper's loop: compile each requested build (saving it to the disk cache), reply."""
    import importlib

    for line in sys.stdin.buffer:
        module, qualname, signature = pickle.loads(base64.b64decode(line))
        try:
            # An attribute read runs the module's code, which a lazy import (numdiff._lazy) put off:
            # its kernels enter _REGISTRY as it runs.
            _ = importlib.import_module(module).__name__
            _REGISTRY[(module, qualname)].compile(signature)
            reply = b"ok\n"
        except Exception:
            reply = b"failed\n"
        sys.stdout.buffer.write(reply)
        sys.stdout.buffer.flush()
