"""Timing that survives a noisy machine: warm-up, repeats, medians, and fair side-by-side runs.

JIT-compiled code is slow the first time it runs (compilation) and caches are cold; one
measurement says little. `timeit` runs the function once to warm up, then `repeat` rounds of
`number` calls, and reports the median per call with its spread. `compare` interleaves the
candidates round by round in one process, so a background job slows them all alike instead of
whichever happened to run during it. `peak_gflops` states this machine's theoretical peak, the
ceiling a GFLOP/s plot is read against.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Comparison",
    "PeakFlops",
    "Timing",
    "compare",
    "conv2d_flops",
    "matmul_flops",
    "peak_gflops",
    "timeit",
]

_TARGET_ROUND_SECONDS = 0.02  # long enough to swamp timer resolution, short enough to repeat


@dataclass(frozen=True)
class Timing:
    """Seconds per call over `repeat` rounds of `number` calls each."""

    samples: tuple[float, ...]
    number: int

    @property
    def repeat(self) -> int:
        return len(self.samples)

    @property
    def median(self) -> float:
        return float(np.median(self.samples))

    @property
    def min(self) -> float:
        return float(np.min(self.samples))

    @property
    def max(self) -> float:
        return float(np.max(self.samples))

    @property
    def mean(self) -> float:
        return float(np.mean(self.samples))

    @property
    def iqr(self) -> float:
        """Interquartile range: the spread of the middle half of the rounds."""
        q1, q3 = np.percentile(self.samples, [25, 75])
        return float(q3 - q1)

    def __str__(self) -> str:
        return (
            f"{_format_seconds(self.median)} median (IQR {_format_seconds(self.iqr)}, "
            f"min {_format_seconds(self.min)}) over {self.repeat} rounds of {self.number}"
        )


def _format_seconds(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _time_calls(fn: Callable[[], Any], number: int, clock: Callable[[], float] | None = None) -> float:
    clock = clock or time.perf_counter  # looked up per call, so a test can stand in a fake clock
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number


def _autorange(fn: Callable[[], Any]) -> int:
    """The smallest count of calls (1, 2, 5, 10, 20, ...) that takes the target round time."""
    number = 1
    while True:
        for factor in (1, 2, 5):
            count = number * factor
            if _time_calls(fn, count) * count >= _TARGET_ROUND_SECONDS:
                return count
        number *= 10


def _warm_up(fn: Callable[[], Any], warmup: int) -> None:
    """`warmup` untimed calls, then more while numdiff's helper process compiles parallel kernels
    those calls handed to it: until it delivers, calls run their serial twins
    (numdiff/kernels/_background.py), and a timing would time neither."""
    background = sys.modules.get("numdiff.kernels._background")
    asked_before = 0 if background is None else len(background.helper_requests())
    for _ in range(warmup):
        fn()
    background = sys.modules.get("numdiff.kernels._background")  # the calls may have loaded it
    if warmup and background is not None:
        background.settle(fn, asked_before)


def timeit(fn: Callable[[], Any], repeat: int = 7, number: int | None = None, warmup: int = 1) -> Timing:
    """Time `fn()`: `warmup` untimed calls, then `repeat` rounds of `number` calls.

    `number=None` picks a count that makes each round last about 20 ms.

    >>> a = numdiff.randn(256, 256)
    >>> t = timeit(lambda: a @ a, repeat=5)
    >>> t.median, t.iqr
    """
    if repeat < 1:
        raise ValueError(f"timeit needs repeat >= 1, got {repeat}")
    if number is not None and number < 1:
        raise ValueError(f"timeit needs number >= 1 (or None to choose), got {number}")
    _warm_up(fn, warmup)
    if number is None:
        number = _autorange(fn)
    return Timing(tuple(_time_calls(fn, number) for _ in range(repeat)), number)


@dataclass(frozen=True)
class Comparison:
    """Timings of named candidates, with each median's ratio to the baseline's median."""

    timings: dict[str, Timing]
    baseline: str

    def ratio(self, name: str) -> float:
        """How many times slower than the baseline `name` is (below 1: faster)."""
        return self.timings[name].median / self.timings[self.baseline].median

    def rows(self) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "median_s": t.median,
                "min_s": t.min,
                "iqr_s": t.iqr,
                "number": t.number,
                "repeat": t.repeat,
                f"vs {self.baseline}": self.ratio(name),
            }
            for name, t in self.timings.items()
        ]

    def __str__(self) -> str:
        header = f"{'candidate':<14}{'median':>12}{'IQR':>12}{'min':>12}{'vs ' + self.baseline:>14}"
        lines = [header, "-" * len(header)]
        for name, t in self.timings.items():
            lines.append(
                f"{name:<14}{_format_seconds(t.median):>12}{_format_seconds(t.iqr):>12}"
                f"{_format_seconds(t.min):>12}{self.ratio(name):>13.2f}x"
            )
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        cells = "".join(
            f"<tr><td>{name}</td><td>{_format_seconds(t.median)}</td>"
            f"<td>{_format_seconds(t.iqr)}</td><td>{_format_seconds(t.min)}</td>"
            f"<td>{self.ratio(name):.2f}x</td></tr>"
            for name, t in self.timings.items()
        )
        return (
            "<table><thead><tr><th>candidate</th><th>median</th><th>IQR</th><th>min</th>"
            f"<th>vs {self.baseline}</th></tr></thead><tbody>{cells}</tbody></table>"
        )


def compare(
    candidates: Mapping[str, Callable[[], Any]],
    repeat: int = 7,
    number: int | None = None,
    baseline: str | None = None,
    warmup: int = 1,
    clock: Callable[[], float] | None = None,
) -> Comparison:
    """Time several implementations of one thing, alternating them round by round.

    Each round runs every candidate once (`number` calls), starting from a different candidate
    each round, so slow periods of the machine are shared out instead of landing on one.
    Ratios are against `baseline` (default: the first candidate). `clock` (default
    ``time.perf_counter``) may be ``time.thread_time`` on a loaded machine: the calling thread's CPU time, which other processes
    do not inflate (it misses work a library hands to its own threads). Libraries that each bring an
    OpenMP runtime (Numba's parallel kernels, PyTorch) slow each other down when interleaved with
    more threads than free cores, their idle threads spinning on the cores the other needs: give
    each one thread on a small machine (``NUMBA_NUM_THREADS=1``, ``torch.set_num_threads(1)``).

    >>> table = compare({"numdiff": lambda: a @ b, "numpy": lambda: a.numpy() @ b.numpy()})
    >>> table.ratio("numpy")
    """
    if not candidates:
        raise ValueError("compare needs at least one candidate")
    names = list(candidates)
    baseline = names[0] if baseline is None else baseline
    if baseline not in candidates:
        raise ValueError(f"baseline {baseline!r} is not one of the candidates {names}")
    if repeat < 1:
        raise ValueError(f"compare needs repeat >= 1, got {repeat}")
    for name in names:
        _warm_up(candidates[name], warmup)
    numbers = {name: number or _autorange(candidates[name]) for name in names}
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(repeat):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(_time_calls(candidates[name], numbers[name], clock))
    timings = {name: Timing(tuple(samples[name]), numbers[name]) for name in names}
    return Comparison(timings, baseline)


# --------------------------------------------------------------------------- FLOPs and peak


def matmul_flops(m: int, k: int, n: int) -> int:
    """Floating-point operations of an (m, k) @ (k, n) product: one multiply and one add each."""
    return 2 * m * k * n


def conv2d_flops(
    batch: int,
    in_channels: int,
    out_channels: int,
    out_height: int,
    out_width: int,
    kernel_height: int,
    kernel_width: int,
) -> int:
    """Floating-point operations of a conv2d forward (the multiply-adds; bias not counted)."""
    per_output = 2 * in_channels * kernel_height * kernel_width
    return batch * out_channels * out_height * out_width * per_output


@dataclass(frozen=True)
class PeakFlops:
    """A theoretical peak: cores x FMA units x SIMD lanes x 2 (multiply and add) x clock."""

    cores: int
    fma_units: int
    simd_lanes: int
    clock_ghz: float
    dtype: str
    assumptions: str

    @property
    def gflops(self) -> float:
        return self.cores * self.fma_units * self.simd_lanes * 2 * self.clock_ghz

    def __str__(self) -> str:
        return (
            f"{self.gflops:.1f} GFLOP/s {self.dtype} = {self.cores} core{'s' if self.cores != 1 else ''} "
            f"x {self.fma_units} FMA units x {self.simd_lanes} lanes x 2 x {self.clock_ghz:.2f} GHz "
            f"({self.assumptions})"
        )


def _cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def _simd_bits(flags: set[str]) -> tuple[int, str]:
    if "avx512f" in flags:
        return 512, "AVX-512"
    if "avx2" in flags or "avx" in flags:
        return 256, "AVX/AVX2"
    if platform.machine().lower() in ("arm64", "aarch64"):
        return 128, "NEON"
    return 128, "SSE"


def peak_gflops(
    dtype: str = "float32",
    cores: int | None = None,
    fma_units: int = 2,
    clock_ghz: float | None = None,
    simd_bits: int | None = None,
) -> PeakFlops:
    """This machine's theoretical peak GFLOP/s, with every assumption stated.

    Defaults: cores = CPUs this process may run on (hyperthreads counted as cores, which
    overstates the peak on SMT machines); 2 FMA units per core (most x86 server cores since
    Haswell/Zen; AMD Zen 4 runs a 512-bit FMA as two 256-bit halves, so its real AVX-512 peak
    is half this); SIMD width from the CPU flags (AVX-512 = 16 float32 lanes); clock = the
    highest current "cpu MHz" in /proc/cpuinfo (turbo and AVX-512 downclocking both move it).
    Pass any of them to override.

    >>> peak = peak_gflops("float32")
    >>> print(peak)  # e.g. 332.8 GFLOP/s float32 = 2 cores x 2 FMA units x 16 lanes x 2 x 2.60 GHz
    """
    if dtype not in ("float32", "float64"):
        raise ValueError(f"peak_gflops dtype must be 'float32' or 'float64', got {dtype!r}")
    info = _cpuinfo()
    notes = []
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        notes.append("cores = CPUs available to this process")
    if simd_bits is None:
        flags: set[str] = set()
        for line in info.splitlines():
            if line.startswith(("flags", "Features")):
                flags = set(line.split(":", 1)[1].split())
                break
        simd_bits, isa = _simd_bits(flags)
        notes.append(f"SIMD {simd_bits}-bit from CPU flags ({isa})")
    if clock_ghz is None:
        mhz = [float(line.split(":", 1)[1]) for line in info.splitlines() if line.startswith("cpu MHz")]
        if not mhz:
            raise ValueError(
                "peak_gflops could not read the clock from /proc/cpuinfo on this system; pass "
                "clock_ghz=... (the sustained all-core clock in GHz)"
            )
        clock_ghz = max(mhz) / 1000.0
        notes.append("clock = current cpu MHz from /proc/cpuinfo")
    notes.append(f"{fma_units} FMA units per core assumed")
    lanes = simd_bits // (32 if dtype == "float32" else 64)
    return PeakFlops(int(cores), fma_units, lanes, float(clock_ghz), dtype, "; ".join(notes))


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
