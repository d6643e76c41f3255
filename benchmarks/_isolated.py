"""Each benchmark candidate in a process of its own, the candidates alternating round by round.

Why: numdiff's Numba kernels run on Numba's 'omp' threading layer (the system libgomp) and
PyTorch on the libgomp it bundles (torch/lib/libgomp.so.1). In one process that makes two OpenMP
pools whose threads keep spinning after each parallel region, so with two threads each on a
two-core machine each library runs against the other's spinning threads: on 2026-12-01 torch
eager's 100-op chain on float32[65536] took 230 ms beside numdiff and 3.4 ms alone.

Here every candidate lives in a worker process (``python3 benchmarks/_isolated.py --worker
LIBRARY THREADS CLOCK``) that sets its thread counts before it imports anything heavy
(NUMBA_NUM_THREADS and numdiff.set_num_threads, torch.set_num_threads, XLA_FLAGS), imports only
the library it times, builds its step with the benchmark's own builder and calls it once. The
parent then asks the workers in turn, round by round and starting from a different one each
round (as numdiff.benchmark.compare does in one process), to time `number` calls; `number` is
picked once per candidate so that a round lasts about 20 ms. Each worker times its own round, so
the pipe's round trip (about 20 us) falls between rounds, outside the timed calls. An idle worker
sits in a blocking read, so its threads sleep while another one is timed, once they stop
spinning: an OpenMP thread polls for a while after its last parallel region before it sleeps
(libgomp's default, PyTorch's: about 4 ms here; numdiff's pool: about 0.1 ms, see
numdiff/_threads.py), so the parent waits :data:`SETTLE_S` after each round before the next
candidate's starts. Without the wait each round began beside the previous candidate's spinning
thread, which on two cores takes one of them (2026-12-02: numdiff's conv 8x8 step at two threads
0.60 ms right after torch rounds, 0.41-0.47 ms otherwise).

Protocol: one JSON object per line on the worker's stdin, one JSON reply per line on a private
copy of its stdout (whatever the libraries print goes to stderr):

    {"op": "build", "builder": "module:function", "kwargs": {...}} -> {"first_s": s}
    {"op": "autorange"}                                             -> {"number": n}
    {"op": "time", "number": n}                                     -> {"seconds": s per call}
    {"op": "call", "function": "module:function", "kwargs": {...}}  -> {"result": ...}

"build" makes the step (the builder returns a no-argument callable) and times its first call;
"call" runs a function and sends back its JSON result (versions, compile times). A failure replies
{"error": traceback}, which the parent raises. Workers ignore Ctrl-C; the parent closes them all
(end of input, then a kill for any still running 5 s later) when it finishes, fails or is
interrupted, and a worker whose parent died sees end of input and exits after its current round.

`InProcess` answers the same requests in the calling process: the old one-process mode
(``--same-process``), kept for comparison.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
_TARGET_ROUND_SECONDS = 0.02
LIBRARIES = ("numdiff", "torch", "jax")


def configure(library: str, threads: int) -> None:
    """Give `library` `threads` threads: environment first, then import it and set its count.

    `library` is one of LIBRARIES, or several joined by "+" (bench_func's check of both results)."""
    os.environ.setdefault("NUMBA_NUM_THREADS", str(threads))
    multi = "true" if threads > 1 else "false"
    os.environ.setdefault(
        "XLA_FLAGS", f"--xla_cpu_multi_thread_eigen={multi} intra_op_parallelism_threads={threads}"
    )
    for path in (str(_HERE.parent), str(_HERE)):  # this checkout's numdiff, the benchmark modules
        if path not in sys.path:
            sys.path.insert(0, path)
    if "+" in library:
        for each in library.split("+"):
            configure(each, threads)
    elif library == "numdiff":
        import numba

        import numdiff

        numdiff.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    elif library == "torch":
        import torch

        torch.set_num_threads(threads)
    elif library == "jax":
        import jax

        jax.config.update("jax_platforms", "cpu")
    else:
        raise ValueError(f"unknown library {library!r}; expected one of {LIBRARIES}")


def _resolve(reference: str) -> Callable:
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


# numdiff.benchmark has the same two helpers; the PyTorch and JAX workers must not import numdiff
# (and with it Numba, SciPy and their thread pools), so the harness keeps its own copy.
def _time_calls(step: Callable[[], Any], number: int, clock: Callable[[], float]) -> float:
    start = clock()
    for _ in range(number):
        step()
    return (clock() - start) / number


def _autorange(step: Callable[[], Any]) -> int:
    """The smallest count of calls (1, 2, 5, 10, 20, ...) that takes about 20 ms."""
    number = 1
    while True:
        for factor in (1, 2, 5):
            count = number * factor
            if _time_calls(step, count, time.perf_counter) * count >= _TARGET_ROUND_SECONDS:
                return count
        number *= 10


def _helper_requests_so_far() -> int:
    background = sys.modules.get("numdiff.kernels._background")
    return 0 if background is None else len(background.helper_requests())


def _settle_background_builds(step: Callable[[], Any], asked_before: int) -> None:
    """Step until no parallel kernel build is left compiling in numdiff's helper process.

    With an empty cache, a first call at two or more threads runs the serial twin of each parallel
    build while a helper process compiles it (numdiff/kernels/_background.py), so timing then times
    the twins with the helper's compilation on the cores: the two-thread rows of a first run on a
    fresh machine were 1.5-170x off. Nothing to do for torch and jax, or where numdiff never
    loaded the helper's module."""
    background = sys.modules.get("numdiff.kernels._background")
    if background is not None:
        background.settle(step, asked_before)


class InProcess:
    """A candidate answered in this process: the worker's request handler without the pipe."""

    def __init__(self, library: str, threads: int, cpu_time: bool) -> None:
        configure(library, threads)
        self.library = library
        self.clock = time.thread_time if cpu_time else time.perf_counter
        self.step: Callable[[], Any] | None = None

    def request(self, op: str, **fields: Any) -> dict:
        if op == "build":
            self.step = _resolve(fields["builder"])(**fields.get("kwargs", {}))
            asked_before = _helper_requests_so_far()
            start = time.perf_counter()
            self.step()
            first_s = time.perf_counter() - start
            _settle_background_builds(self.step, asked_before)
            return {"first_s": first_s}
        if op == "autorange":
            return {"number": _autorange(self.step)}
        if op == "time":
            return {"seconds": _time_calls(self.step, fields["number"], self.clock)}
        if op == "call":
            return {"result": _resolve(fields["function"])(**fields.get("kwargs", {}))}
        raise ValueError(f"unknown request {op!r}")

    def close(self) -> None:
        self.step = None


class Worker:
    """A candidate in its own process, driven through `request` like `InProcess`."""

    def __init__(self, library: str, threads: int, cpu_time: bool) -> None:
        self.library = library
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", library, str(threads)]
        command.append("thread" if cpu_time else "wall")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def request(self, op: str, **fields: Any) -> dict:
        try:
            self.process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # it has exited: the empty read below says so
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.library} worker exited (code {self.process.wait()}) during {op!r}")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"the {self.library} worker failed on {op!r}:\n{reply['error']}")
        return reply

    def close(self) -> None:
        """End of input: the worker leaves its loop once its current request is done."""
        try:
            self.process.stdin.close()
        except OSError:  # it has gone already
            pass

    def wait(self, deadline: float) -> None:
        """Wait for the worker to exit until `deadline` (time.monotonic), then kill it."""
        try:
            self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


Candidate = Worker | InProcess


@contextmanager
def candidates(
    libraries: Mapping[str, str], threads: int, cpu_time: bool, same_process: bool
) -> Iterator[dict[str, Candidate]]:
    """{candidate name: Worker} for {candidate name: library} (InProcess ones with `same_process`),
    all closed on leaving, also on an error or Ctrl-C."""
    kind = InProcess if same_process else Worker
    started: dict[str, Candidate] = {}
    try:
        for name, library in libraries.items():
            started[name] = kind(library, threads, cpu_time)
        yield started
    finally:
        for candidate in started.values():
            candidate.close()
        deadline = time.monotonic() + 5.0  # a worker mid-round finishes it; one that hangs is killed
        for candidate in started.values():
            if isinstance(candidate, Worker):
                candidate.wait(deadline)


@dataclass(frozen=True)
class Rounds:
    """Seconds per call of each round, and the calls per round."""

    samples: tuple[float, ...]
    number: int

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)


SETTLE_S = 0.01
"""Seconds between two rounds: longer than an idle OpenMP thread spins (see the module docstring)."""


def compare(
    started: Mapping[str, Candidate], repeat: int, numbers: Mapping[str, int] | None = None
) -> dict[str, Rounds]:
    """`repeat` rounds of every built candidate, each round starting from a different one.

    `numbers` (calls per round) defaults to each candidate's autorange, measured once here."""
    names = list(started)
    numbers = numbers or {name: started[name].request("autorange")["number"] for name in names}
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(repeat):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            time.sleep(SETTLE_S)
            samples[name].append(started[name].request("time", number=numbers[name])["seconds"])
    return {name: Rounds(tuple(samples[name]), numbers[name]) for name in names}


def _serve(library: str, threads: int, clock: str) -> None:
    """The worker's loop: answer requests from stdin until it closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and closes us
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # library output must not enter the protocol
    sys.stdout = sys.stderr
    try:
        handler, failure = InProcess(library, threads, cpu_time=clock == "thread"), None
    except Exception:
        handler, failure = None, traceback.format_exc()  # sent back as the reply to every request
    for line in sys.stdin:
        message = json.loads(line)
        try:
            reply = {"error": failure} if handler is None else handler.request(message.pop("op"), **message)
        except Exception:
            reply = {"error": traceback.format_exc()}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "--worker":
        raise SystemExit("usage: _isolated.py --worker LIBRARY THREADS wall|thread (started by the benchmarks)")
    _serve(sys.argv[2], int(sys.argv[3]), sys.argv[4])
