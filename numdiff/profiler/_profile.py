"""``numdiff.profiler.profile``: record where a step's time goes, with torch.profiler's names.

While a profile records, numdiff's op calls, backward nodes, module calls and optimizer steps
report to it (numdiff._profiling.recorder); so do ``record_function`` blocks and Numba's
compilations, which are shown as their own rows (``numba compile: <kernel>``) and not counted in
the self time of the op that triggered them. With ``schedule`` the profile cycles through
wait / warmup / record steps at each ``prof.step()``, and ``on_trace_ready`` gets the profile when
a cycle's last recorded step ends.
"""

from __future__ import annotations

import enum
import gzip
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from numba.core import event as numba_event

from numdiff import _profiling
from numdiff.profiler._events import EventList, FunctionEvent


class ProfilerActivity(enum.Enum):
    """What to record: numdiff records the CPU (its CUDA kernels run inside the CPU-side op events)."""

    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3


def supported_activities() -> set[ProfilerActivity]:
    """The activities numdiff's profiler records: the CPU."""
    return {ProfilerActivity.CPU}


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """torch.profiler.schedule: skip_first steps, then cycles of wait, warmup and active steps.

    >>> s = schedule(wait=1, warmup=1, active=2)
    >>> [s(i).name for i in range(4)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE']
    """
    if min(wait, warmup, repeat, skip_first) < 0 or active < 1:
        raise ValueError(f"schedule: wait, warmup, repeat and skip_first must be >= 0 and active >= 1, got "
                         f"wait={wait}, warmup={warmup}, active={active}, repeat={repeat}, skip_first={skip_first}")

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def tensorboard_trace_handler(dir_name: str | os.PathLike, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[profile], None]:
    """An ``on_trace_ready`` that writes each cycle's Chrome trace where TensorBoard's profiler plugin looks."""
    dir_name = os.fspath(dir_name)

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{time.time_ns() // 1_000_000}.pt.trace.json")
        prof.export_chrome_trace(path)
        if use_gzip:
            with open(path, "rb") as source, gzip.open(path + ".gz", "wb") as target:
                target.write(source.read())
            os.remove(path)

    return handler


def _shapes(values: Any) -> list:
    return [list(v.shape) if hasattr(v, "shape") else [] for v in values]


class _Recorder(numba_event.Listener):
    """Collects events while a profile records; one stack of open events per thread."""

    def __init__(self, record_shapes: bool, profile_memory: bool) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.events: list[FunctionEvent] = []
        self._local = threading.local()
        self._lock = threading.Lock()

    def _stack(self) -> list:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def begin(self, name: str, category: str, inputs: Any = ()) -> FunctionEvent:
        shapes = _shapes(inputs) if self.record_shapes and inputs else []
        event = FunctionEvent(name, category, threading.get_ident(), time.perf_counter_ns(), input_shapes=shapes)
        self._stack().append(event)
        return event

    def end(self, event: FunctionEvent, result: Any = None) -> None:
        event.end_ns = time.perf_counter_ns()
        stack = self._stack()
        if stack and stack[-1] is event:
            stack.pop()
        own = 0
        if self.profile_memory and result is not None:
            own = sum(getattr(getattr(r, "_data", r), "nbytes", 0) for r in
                      (result if isinstance(result, (tuple, list)) else (result,)))
        event.cpu_memory_usage = own + event.children_memory  # what this region allocated, inner events included
        if stack:
            parent = stack[-1]
            parent.children_ns += event.end_ns - event.start_ns
            parent.children_memory += event.cpu_memory_usage
        with self._lock:
            self.events.append(event)

    # Reached from numdiff's hot paths through numdiff._profiling.recorder.
    def enter_op(self, cls: type, inputs: tuple) -> bool:
        """Open an op's event; False for the call that re-enters apply to run the op itself."""
        local = self._local
        if getattr(local, "reentry", False):
            local.reentry = False
            return False
        local.reentry = True
        self.begin(getattr(cls, "op_name", None) or cls.__name__, "op", inputs)
        return True

    def exit_op(self, result: Any) -> Any:
        self._local.reentry = False
        stack = self._stack()
        if stack and stack[-1].category == "op":
            self.end(stack[-1], result)
        return result

    def record(self, name: str, category: str, run: Callable[..., Any], *args: Any) -> Any:
        """``run(*args)`` timed as an event named `name`."""
        event = self.begin(name, category)
        try:
            return run(*args)
        finally:
            self.end(event)

    # Numba's compile events (numba.core.event listener protocol).
    def on_start(self, event: Any) -> None:
        dispatcher = event.data.get("dispatcher") if isinstance(event.data, dict) else None
        name = getattr(getattr(dispatcher, "py_func", None), "__name__", "kernel")
        self.begin(f"numba compile: {name}", "compile")

    def on_end(self, event: Any) -> None:
        stack = self._stack()
        if stack and stack[-1].category == "compile":
            self.end(stack[-1])


class record_function:  # noqa: N801 - torch.profiler's name
    """A named region in the profile: a context manager or a decorator.

    >>> with numdiff.profiler.record_function("data loading"):
    ...     batch = next(iter(loader))
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self._event: FunctionEvent | None = None
        self._recorder: _Recorder | None = None

    def __enter__(self) -> record_function:
        self._recorder = _profiling.recorder
        if self._recorder is not None:
            self._event = self._recorder.begin(self.name, "user_annotation")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._recorder is not None and self._event is not None:
            self._recorder.end(self._event)
        self._event = self._recorder = None

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name):
                return function(*args, **kwargs)

        wrapped.__name__ = getattr(function, "__name__", "wrapped")
        wrapped.__doc__ = function.__doc__
        return wrapped


class profile:  # noqa: N801 - torch.profiler's name
    """Record op, backward, module and optimizer events while active (torch.profiler.profile).

    >>> with numdiff.profiler.profile(record_shapes=True) as prof:
    ...     loss = model(x).sum(); loss.backward()
    >>> print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    """

    def __init__(self, *, activities: Any = None, schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, **ignored: Any) -> None:
        self.activities = set(activities or supported_activities())
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.step_num = 0
        self._recorder: _Recorder | None = None
        self._finished: list[FunctionEvent] = []
        self._step_event: FunctionEvent | None = None
        self._action = ProfilerAction.RECORD if schedule is None else schedule(0)

    # ----------------------------------------------------------------- recording
    def _start_recording(self) -> None:
        if self._recorder is not None:
            return
        if _profiling.recorder is not None:
            raise RuntimeError("numdiff.profiler: another profile is already recording; profiles do not nest")
        self._recorder = _Recorder(self.record_shapes, self.profile_memory)
        numba_event.register("numba:compile", self._recorder)
        _profiling.recorder = self._recorder

    def _stop_recording(self) -> None:
        if self._recorder is None:
            return
        if self._step_event is not None:
            self._recorder.end(self._step_event)
            self._step_event = None
        _profiling.recorder = None
        numba_event.unregister("numba:compile", self._recorder)
        self._finished = self._recorder.events
        self._recorder = None

    def _recording(self, action: ProfilerAction) -> bool:
        return action in (ProfilerAction.WARMUP, ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)

    def _open_step(self) -> None:
        if self._recorder is not None and self.schedule is not None:
            self._step_event = self._recorder.begin(f"ProfilerStep#{self.step_num}", "step")

    def start(self) -> None:
        if self._recording(self._action):
            self._start_recording()
            self._open_step()

    def stop(self) -> None:
        saving = self._recorder is not None and self._action != ProfilerAction.WARMUP
        self._stop_recording()
        if saving and self.on_trace_ready is not None and self.schedule is None:
            self.on_trace_ready(self)

    def step(self) -> None:
        """Mark the end of a training step: the schedule decides what the next step records."""
        if self._step_event is not None and self._recorder is not None:
            self._recorder.end(self._step_event)
            self._step_event = None
        previous = self._action
        self.step_num += 1
        self._action = self.schedule(self.step_num) if self.schedule is not None else ProfilerAction.RECORD
        if previous == ProfilerAction.WARMUP and self._recorder is not None:
            self._recorder.events.clear()  # warmup steps are recorded and dropped, as in torch
        if previous == ProfilerAction.RECORD_AND_SAVE:
            self._stop_recording()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        if self._recording(self._action):
            self._start_recording()
            self._open_step()
        elif self._recorder is not None:
            self._stop_recording()

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ----------------------------------------------------------------- results
    def events(self) -> EventList:
        """Every recorded event (of the last finished cycle, with a schedule)."""
        return EventList(self._finished, self.profile_memory, self.record_shapes)

    def key_averages(self, group_by_input_shape: bool = False, **ignored: Any) -> EventList:
        if group_by_input_shape and not self.record_shapes:
            raise ValueError("key_averages(group_by_input_shape=True) needs profile(record_shapes=True)")
        return self.events().key_averages(group_by_input_shape)

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        self.events().export_chrome_trace(path)

    def compile_time_ms(self) -> float:
        """Milliseconds Numba spent compiling (or loading cached) kernels during the recording."""
        return sum(e.end_ns - e.start_ns for e in self._finished if e.category == "compile") / 1e6
