"""numdiff.utils.benchmark: ``torch.utils.benchmark``'s Timer, Measurement and Compare.

`Timer` times a statement (source code run with `globals`, as ``timeit.Timer`` does, or a
callable) after running `setup` once. ``timeit(number)`` runs it `number` times;
``blocked_autorange`` picks a block size so one block takes a measurable time and runs blocks
until `min_run_time` has passed; ``adaptive_autorange`` runs blocks until the interquartile range
of the block times is within `threshold` of the median. Each returns a `Measurement` of
seconds per run. `Compare` prints Measurements as a table: one per label, rows by sub_label,
columns by description, as PyTorch's tutorials print them.

>>> x = numdiff.randn(64, 64)
>>> m = Timer("x @ x", globals={"x": x}).blocked_autorange(min_run_time=0.1)
>>> m.median
"""

from __future__ import annotations

import math
import textwrap
import time
import timeit as _timeit
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from numdiff._threads import get_num_threads, set_num_threads, thread_pool_size
from numdiff.utils.benchmark.fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias

__all__ = ["Compare", "FuzzedParameter", "FuzzedTensor", "Fuzzer", "Measurement", "ParameterAlias", "Timer"]

_MIN_BLOCK_SECONDS = 0.01  # a block at least this long keeps the clock's resolution out of the result
_MIN_CONFIDENCE_INTERVAL = 25e-9  # seconds: a spread below a clock tick is not resolved
_MAX_BLOCK_RUNS = 10**9  # a statement too fast (or a clock too coarse) to reach it stops here


@dataclass
class Measurement:
    """Seconds per run, from blocks of `number_per_run` runs each (`raw_times`: seconds per block)."""

    number_per_run: int
    raw_times: list[float]
    task_spec: dict[str, Any] = field(default_factory=dict)

    @property
    def times(self) -> list[float]:
        """Seconds per run, one value per block."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def mean(self) -> float:
        return float(np.mean(self.times))

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def iqr(self) -> float:
        q1, q3 = np.percentile(self.times, [25, 75])
        return float(q3 - q1)

    metadata: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        if name in ("label", "sub_label", "description", "stmt", "setup", "num_threads", "env"):
            return self.__dict__.get("task_spec", {}).get(name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def title(self) -> str:
        """``label: sub_label`` (or the label), else the statement (PyTorch's Measurement.title)."""
        spec = self.task_spec
        if spec.get("label") is not None:
            return spec["label"] + (f": {spec['sub_label']}" if spec.get("sub_label") else "")
        return spec.get("stmt") or ""

    @property
    def as_row_name(self) -> str:
        """The sub_label, else the statement: the row Compare files this Measurement under."""
        spec = self.task_spec
        return spec.get("sub_label") or spec.get("stmt") or "[Unknown]"

    @property
    def significant_figures(self) -> int:
        """How many leading digits of the median the spread supports (1 to 4), estimated as
        PyTorch's: a 90% confidence interval from the middle half of the sorted times."""
        ordered = sorted(self.times)
        middle = ordered[len(ordered) // 4 : math.ceil(3 * len(ordered) / 4)]
        interval = max(1.645 * float(np.std(middle)) / math.sqrt(len(middle)), _MIN_CONFIDENCE_INTERVAL)
        return min(max(math.floor(math.log10(self.median / interval)), 1), 4)

    @property
    def has_warnings(self) -> bool:
        """Whether the IQR is over 10% of the median (PyTorch prints a warning then)."""
        return not self.meets_confidence(0.1)

    def meets_confidence(self, threshold: float = 0.1) -> bool:
        """Whether the IQR is within `threshold` of the median."""
        return self.iqr / self.median < threshold if self.median else True

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """One Measurement per task (same statement, labels and threads), its block times joined.

        >>> Measurement.merge([m1, m2])
        """
        grouped: dict[tuple, list[Measurement]] = {}
        for m in measurements:
            grouped.setdefault(tuple(sorted((k, str(v)) for k, v in m.task_spec.items())), []).append(m)
        merged = []
        for group in grouped.values():
            seconds = [t for m in group for t in m.times]
            merged.append(Measurement(1, seconds, dict(group[0].task_spec), group[0].metadata))
        return merged

    def __repr__(self) -> str:
        spec = self.task_spec
        head = [spec.get("label") or "", spec.get("stmt") or ""]
        if spec.get("description"):
            head.append(spec["description"])
        body = (f"  Median: {_human(self.median)}\n  IQR:    {_human(self.iqr)} "
                f"({_human(min(self.times))} to {_human(max(self.times))})\n"
                f"  {len(self.raw_times)} measurements, {self.number_per_run} runs per measurement, "
                f"{spec.get('num_threads', 1)} thread{'s' if spec.get('num_threads', 1) != 1 else ''}")
        return "<numdiff.utils.benchmark.Measurement object>\n" + "\n".join(h for h in head if h) + "\n" + body


def _human(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.2f} {unit}"
    return f"{seconds / 1e-9:.2f} ns"


class Timer:
    """Time `stmt` (a string run with `globals`, or a callable); see the module docstring."""

    def __init__(
        self,
        stmt: str | Callable[[], Any] = "pass",
        setup: str | Callable[[], Any] = "pass",
        global_setup: str = "",
        timer: Callable[[], float] = time.perf_counter,
        globals: dict[str, Any] | None = None,  # noqa: A002 - PyTorch's name
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: str = "python",
    ) -> None:
        if language not in ("python", "py"):
            raise ValueError(f"Timer: numdiff times Python statements only, got language={language!r}")
        if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError(f"Timer: num_threads must be a positive int, got {num_threads!r}")
        stmt_code = textwrap.dedent(stmt) if isinstance(stmt, str) else stmt
        setup_code = textwrap.dedent(setup) if isinstance(setup, str) else setup
        namespace = dict(globals or {})
        if global_setup:
            exec(compile(global_setup, "<global_setup>", "exec"), namespace)  # the caller's own code
        self._timer = _timeit.Timer(stmt_code, setup_code, timer=timer, globals=namespace)
        self._clock = timer
        self._num_threads = num_threads
        self._task_spec = {
            "stmt": stmt if isinstance(stmt, str) else getattr(stmt, "__name__", repr(stmt)),
            "setup": setup if isinstance(setup, str) else getattr(setup, "__name__", repr(setup)),
            "label": label, "sub_label": sub_label, "description": description, "env": env,
            "num_threads": num_threads,
        }  # fmt: skip

    def _run(self, number: int) -> float:
        previous = get_num_threads()
        # PyTorch runs a statement on as many threads as asked; Numba's pool cannot grow after
        # start-up, so a request beyond it runs on the whole pool (task_spec keeps the request).
        set_num_threads(min(self._num_threads, thread_pool_size()))
        try:
            return self._timer.timeit(number)
        finally:
            set_num_threads(previous)

    def _measurement(self, number: int, raw: list[float]) -> Measurement:
        return Measurement(number, raw, dict(self._task_spec))

    def timeit(self, number: int = 1000000) -> Measurement:
        """Run the statement `number` times (after one warm-up run): one block."""
        if number < 1:
            raise ValueError(f"Timer.timeit: number must be >= 1, got {number}")
        self._run(1)
        return self._measurement(number, [self._run(number)])

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        """PyTorch leaves Timer.repeat unimplemented (it raises NotImplementedError); so does this."""
        raise NotImplementedError("Timer.repeat: use Timer.timeit or Timer.blocked_autorange, as in PyTorch")

    def autorange(self, callback: Callable[[int, float], None] | None = None) -> None:
        """PyTorch leaves Timer.autorange unimplemented; use blocked_autorange."""
        raise NotImplementedError("Timer.autorange: use Timer.blocked_autorange, as in PyTorch")

    def _block_size(self) -> int:
        self._run(1)  # warm-up: a first run that compiles kernels must not size the blocks
        number = 1
        while number < _MAX_BLOCK_RUNS and self._run(number) < _MIN_BLOCK_SECONDS:
            number *= 10
        return number

    def blocked_autorange(self, callback: Callable[[int, float], None] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Blocks of a size that takes >= 10 ms each, repeated until `min_run_time` seconds passed."""
        number = self._block_size()
        raw: list[float] = []
        start = self._clock()
        while not raw or self._clock() - start < min_run_time:
            elapsed = self._run(number)
            if callback is not None:
                callback(number, elapsed)
            raw.append(elapsed)
        return self._measurement(number, raw)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback: Callable[[int, float], None] | None = None) -> Measurement:
        """Blocks until the IQR of the block times is within `threshold` of their median (at least
        `min_run_time` and three blocks, at most `max_run_time` seconds)."""
        number = self._block_size()
        raw: list[float] = []
        start = self._clock()
        while True:
            elapsed = self._run(number)
            if callback is not None:
                callback(number, elapsed)
            raw.append(elapsed)
            spent = self._clock() - start
            if len(raw) >= 3 and spent >= min_run_time:
                measurement = self._measurement(number, raw)
                if measurement.iqr <= threshold * measurement.median or spent >= max_run_time:
                    return measurement


class Compare:
    """A table of Measurements: one per label, rows by sub_label (and thread count), columns by
    description, each cell the median time in a shared unit.

    >>> Compare([m1, m2]).print()
    """

    def __init__(self, results: Iterable[Measurement]) -> None:
        self._results = list(results)
        for r in self._results:
            if not isinstance(r, Measurement):
                raise TypeError(f"Compare: expected Measurements, got {type(r).__name__}")
        self._trim = False

    def trim_significant_figures(self) -> None:
        """Show each cell to three significant figures."""
        self._trim = True

    def colorize(self, rowwise: bool = False) -> None:
        """Accepted for PyTorch code; the table is printed without colour."""

    def extend_results(self, results: Iterable[Measurement]) -> None:
        self._results.extend(results)

    def __str__(self) -> str:
        if not self._results:
            return ""
        scale, unit = _common_unit([r.median for r in self._results])
        tables = []
        for label in dict.fromkeys(r.task_spec.get("label") or "" for r in self._results):
            group = [r for r in self._results if (r.task_spec.get("label") or "") == label]
            columns = list(dict.fromkeys(r.task_spec.get("description") or "" for r in group))
            rows = list(dict.fromkeys((r.task_spec.get("sub_label") or r.task_spec.get("stmt") or "",
                                       r.task_spec.get("num_threads", 1)) for r in group))
            cells = {((r.task_spec.get("sub_label") or r.task_spec.get("stmt") or "", r.task_spec.get("num_threads", 1)),
                      r.task_spec.get("description") or ""): r.median / scale for r in group}
            fmt = "{:.3g}" if self._trim else "{:.1f}"
            name_width = max(len(f"{name} ({threads} threads)") for name, threads in rows)
            width = max(10, *(len(c) for c in columns))
            lines = [f"[{'-' * 10} {label} {'-' * 10}]", " " * (name_width + 2) + " | ".join(c.rjust(width) for c in columns)]
            for row in rows:
                values = [fmt.format(cells[(row, c)]) if (row, c) in cells else "" for c in columns]
                lines.append(f"{row[0]} ({row[1]} threads)".ljust(name_width + 2) + " | ".join(v.rjust(width) for v in values))
            lines.append(f"\nTimes are in {unit} ({unit}).")
            tables.append("\n".join(lines))
        return "\n\n".join(tables) + "\n"

    def print(self) -> None:  # noqa: A003 - PyTorch's name
        """Print the table."""
        print(str(self))


def _common_unit(values: list[float]) -> tuple[float, str]:
    smallest = min(values)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if smallest >= scale:
            return scale, unit
    return 1e-9, "ns"
