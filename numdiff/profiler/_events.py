"""Profiler events and their averages: what ``prof.key_averages().table()`` prints.

An event is one timed region on one thread: an op's forward, a backward node, a module call, an
optimizer step, a ``record_function`` block, or a Numba compilation. Times are nanoseconds from
``time.perf_counter_ns``; an event's self time is its total minus the events directly inside it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FunctionEvent:
    """One timed region: name, category, thread, start and end (ns), shapes, bytes allocated."""

    name: str
    category: str
    thread: int
    start_ns: int
    end_ns: int = 0
    input_shapes: list = field(default_factory=list)
    cpu_memory_usage: int = 0
    children_ns: int = 0  # time of the events directly inside this one
    children_memory: int = 0
    compile_ns: int = 0  # Numba compilation inside this event (its own events, category "compile")

    @property
    def cpu_time_total(self) -> float:
        """Total time in microseconds, as torch reports."""
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def self_cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns - self.children_ns) / 1e3

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - self.children_memory

    @property
    def key(self) -> str:
        return self.name


@dataclass
class FunctionEventAvg:
    """The events of one name (and input shapes, when grouped by them), summed."""

    key: str
    category: str = ""
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0
    cpu_memory_usage: int = 0
    self_cpu_memory_usage: int = 0
    input_shapes: str = ""

    @property
    def cpu_time(self) -> float:
        """Average total time per call, in microseconds."""
        return self.cpu_time_total / max(self.count, 1)

    def add(self, event: FunctionEvent) -> None:
        self.count += 1
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.cpu_memory_usage += event.cpu_memory_usage
        self.self_cpu_memory_usage += event.self_cpu_memory_usage


_SORT_KEYS = {
    "self_cpu_time_total", "cpu_time_total", "cpu_time", "count", "cpu_memory_usage", "self_cpu_memory_usage",
    "self_cpu_time", "cpu_time_avg",
}


def _fmt_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _fmt_bytes(n: int) -> str:
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} b"


class EventList(list):
    """A list of events (or their averages) that can print itself as torch's profiler table."""

    def __init__(self, events: Any = (), profile_memory: bool = False, shapes: bool = False) -> None:
        super().__init__(events)
        self.profile_memory = profile_memory
        self.shapes = shapes

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        groups: dict[tuple, FunctionEventAvg] = {}
        for event in self:
            shapes = str(event.input_shapes) if group_by_input_shape else ""
            key = (event.name, shapes)
            if key not in groups:
                groups[key] = FunctionEventAvg(event.name, event.category, input_shapes=shapes)
            groups[key].add(event)
        return EventList(groups.values(), self.profile_memory, group_by_input_shape)

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_name_column_width: int = 55,
              header: str | None = None, top_level_events_only: bool = False, **ignored: Any) -> str:
        """A text table, one row per entry: self and total CPU time, calls, (memory, shapes)."""
        rows = list(self if isinstance(next(iter(self), None), FunctionEventAvg) or not self else self.key_averages())
        if sort_by is not None:
            key = {"self_cpu_time": "self_cpu_time_total", "cpu_time_avg": "cpu_time"}.get(sort_by, sort_by)
            if key not in _SORT_KEYS:
                raise ValueError(f"table: sort_by={sort_by!r} is not one of {sorted(_SORT_KEYS)}")
            rows.sort(key=lambda e: getattr(e, key), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        total_self = sum(e.self_cpu_time_total for e in self) or 1.0
        columns = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
        if self.profile_memory:
            columns += ["CPU Mem", "Self CPU Mem"]
        columns.append("# of Calls")
        if self.shapes:
            columns.append("Input Shapes")
        width = max([len(c) for c in columns[:1]] + [min(len(e.key), max_name_column_width) for e in rows])
        body = []
        for e in rows:
            cells = [e.key[:max_name_column_width], f"{100 * e.self_cpu_time_total / total_self:.2f}%",
                     _fmt_time(e.self_cpu_time_total), f"{100 * e.cpu_time_total / total_self:.2f}%",
                     _fmt_time(e.cpu_time_total), _fmt_time(e.cpu_time)]
            if self.profile_memory:
                cells += [_fmt_bytes(e.cpu_memory_usage), _fmt_bytes(e.self_cpu_memory_usage)]
            cells.append(str(e.count))
            if self.shapes:
                cells.append(e.input_shapes)
            body.append(cells)
        widths = [width] + [max([len(columns[i])] + [len(r[i]) for r in body]) for i in range(1, len(columns))]
        line = "-" * (sum(widths) + 2 * (len(widths) - 1))

        def render(cells: list) -> str:
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        out = ([header] if header else []) + [line, render(columns), line] + [render(r) for r in body]
        out += [line, f"Self CPU time total: {_fmt_time(total_self)}"]
        return "\n".join(out) + "\n"

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        """Write the events as a Chrome trace (JSON), which Perfetto and chrome://tracing open."""
        pid = os.getpid()
        trace = []
        for e in self:
            if not isinstance(e, FunctionEvent):
                raise TypeError("export_chrome_trace needs the raw events (prof.events()), not their averages")
            entry = {"name": e.name, "cat": e.category, "ph": "X", "pid": pid, "tid": e.thread,
                     "ts": e.start_ns / 1e3, "dur": (e.end_ns - e.start_ns) / 1e3, "args": {}}
            if e.input_shapes:
                entry["args"]["Input Dims"] = e.input_shapes
            if e.cpu_memory_usage:
                entry["args"]["CPU Mem"] = e.cpu_memory_usage
            trace.append(entry)
        with open(path, "w") as handle:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, handle)
