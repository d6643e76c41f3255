"""What Numba has compiled, and compiling it ahead of time.

numdiff's kernels are Numba functions compiled the first time each dtype and layout reaches them,
which makes the first call of an op slow (seconds) and later calls fast. With ``cache=True``
the machine code is also written to disk (``__pycache__`` or ``NUMBA_CACHE_DIR``), so a later
process loads it instead of compiling again.

- `warmup` compiles every kernel for the given dtypes up front, with a progress bar, and
  records how long each kernel took (compiling, or loading from the disk cache).
- `compiled_kernels` lists every Numba dispatcher in numdiff.kernels with the signatures it holds,
  whether each came from the compiler or the disk cache, and the time spent.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from numba.core import event
from numba.core.dispatcher import Dispatcher

__all__ = ["KernelInfo", "KernelTable", "compiled_kernels", "warmup"]

# Seconds each kernel took during warmup(), by qualified name: the only record of how long a
# cache *load* took, which Numba does not keep (it keeps compile times only).
_warmup_seconds: dict[str, float] = {}


@dataclass(frozen=True)
class SignatureInfo:
    """One compiled specialisation of a kernel."""

    signature: str
    source: str  # "compiled" in this process, or "disk cache"
    compile_seconds: float | None  # Numba's own compile timer; None for cache loads


@dataclass(frozen=True)
class KernelInfo:
    """A Numba dispatcher in numdiff.kernels and what it has compiled so far."""

    name: str
    signatures: tuple[SignatureInfo, ...]
    warmup_seconds: float | None
    cache_path: str | None

    @property
    def compile_seconds(self) -> float:
        return sum(s.compile_seconds or 0.0 for s in self.signatures)


@dataclass
class KernelTable:
    """The result of `compiled_kernels`: a list of `KernelInfo` that prints as a table."""

    kernels: list[KernelInfo] = field(default_factory=list)

    def __iter__(self):
        return iter(self.kernels)

    def __len__(self) -> int:
        return len(self.kernels)

    def __getitem__(self, name: str) -> KernelInfo:
        for kernel in self.kernels:
            if kernel.name == name or kernel.name.endswith("." + name):
                return kernel
        raise KeyError(f"no Numba kernel named {name!r}; known: {[k.name for k in self.kernels]}")

    @property
    def total_compile_seconds(self) -> float:
        return sum(k.compile_seconds for k in self.kernels)

    def _rows(self) -> list[tuple[str, str, str, str]]:
        rows = []
        for kernel in self.kernels:
            short = kernel.name.removeprefix("numdiff.kernels.")
            warm = "" if kernel.warmup_seconds is None else f"{kernel.warmup_seconds:.3f}"
            if not kernel.signatures:
                rows.append((short, "(not compiled yet)", "", warm))
            for sig in kernel.signatures:
                took = f"{sig.compile_seconds:.3f}" if sig.compile_seconds is not None else "-"
                rows.append((short, sig.signature, f"{sig.source} {took}", warm))
        return rows

    def __str__(self) -> str:
        rows = [("kernel", "signature", "source / compile s", "warmup s")] + self._rows()
        widths = [min(max(len(r[i]) for r in rows), 70) for i in range(4)]
        lines = ["  ".join(cell[:70].ljust(w) for cell, w in zip(row, widths)) for row in rows]
        lines.insert(1, "-" * len(lines[0]))
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        body = "".join(
            "<tr>" + "".join(f"<td><code>{cell}</code></td>" for cell in row) + "</tr>"
            for row in self._rows()
        )
        return (
            "<table><thead><tr><th>kernel</th><th>signature</th><th>source / compile s</th>"
            f"<th>warmup s</th></tr></thead><tbody>{body}</tbody></table>"
        )


def _kernel_modules(package: str) -> list[ModuleType]:
    root = importlib.import_module(package)
    modules = [root]
    for info in pkgutil.walk_packages(root.__path__, prefix=package + "."):
        modules.append(importlib.import_module(info.name))
    return modules


def _dispatchers(package: str) -> list[tuple[str, Dispatcher]]:
    """Every Numba dispatcher defined in `package`, once each, named where it was defined."""
    found: dict[int, tuple[str, Dispatcher]] = {}
    for module in _kernel_modules(package):
        for value in vars(module).values():
            if isinstance(value, Dispatcher) and id(value) not in found:
                func = value.py_func
                if func.__module__.startswith(package):
                    found[id(value)] = (f"{func.__module__}.{func.__qualname__}", value)
    return sorted(found.values(), key=lambda item: item[0])


def _signature_info(dispatcher: Dispatcher, signature: tuple) -> SignatureInfo:
    text = "(" + ", ".join(str(t) for t in signature) + ")"
    stats = dispatcher.stats
    overload = dispatcher.overloads.get(signature)
    timers = (getattr(overload, "metadata", None) or {}).get("timers", {})
    if stats.cache_hits.get(signature):
        return SignatureInfo(text, "disk cache", None)
    return SignatureInfo(text, "compiled", timers.get("compiler_lock"))


def compiled_kernels(package: str = "numdiff.kernels") -> KernelTable:
    """List the Numba kernels in `package`, their compiled signatures and compile/load times.

    >>> numdiff.warmup(("float32",), progress=False)
    >>> print(numdiff.jit.compiled_kernels())  # kernel, signature, source, seconds
    """
    kernels = []
    for name, dispatcher in _dispatchers(package):
        signatures = tuple(_signature_info(dispatcher, sig) for sig in dispatcher.signatures)
        kernels.append(
            KernelInfo(
                name=name,
                signatures=signatures,
                warmup_seconds=_warmup_seconds.get(name),
                cache_path=dispatcher.stats.cache_path,
            )
        )
    return KernelTable(kernels)


def warmup(dtypes: Iterable[str] = ("float32", "float64"), progress: bool = True) -> KernelTable:
    """Compile (or load from the disk cache) every kernel for `dtypes` now, not on first use.

    Delegates to ``numdiff.kernels.compile_all``, which shows a tqdm progress bar when `progress`
    is true. Returns `compiled_kernels()`, which then includes the seconds each kernel took here.

    >>> numdiff.warmup(("float32",))  # a bar over the kernels, then the table
    """
    dtypes = tuple(str(d).removeprefix("numdiff.") for d in dtypes)
    for dtype in dtypes:
        if dtype not in ("float32", "float64"):
            raise ValueError(f"warmup compiles float32 and float64 kernels; got dtype {dtype!r}")
    from numdiff import kernels

    compile_all = getattr(kernels, "compile_all", None)
    if compile_all is None:
        raise RuntimeError(
            "numdiff.kernels.compile_all is missing from this build, so warmup cannot list the "
            "kernels to compile; kernels still compile on first use"
        )
    timer = _CompileTimer("numdiff.kernels")
    with event.install_listener("numba:compile", timer):
        report = compile_all(dtypes, progress)
    measured = dict(timer.seconds)
    measured.update(_report_seconds(report))
    for name, seconds in measured.items():
        _warmup_seconds[name] = _warmup_seconds.get(name, 0.0) + seconds
    return compiled_kernels()


class _CompileTimer(event.Listener):
    """Adds up, per kernel in `package`, the seconds Numba spends compiling it."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.seconds: dict[str, float] = {}
        self._open: list[tuple[str, float]] = []

    def on_start(self, ev: event.Event) -> None:
        func = ev.data["dispatcher"].py_func
        self._open.append((f"{func.__module__}.{func.__qualname__}", time.perf_counter()))

    def on_end(self, ev: event.Event) -> None:
        name, started = self._open.pop()
        if name.startswith(self.package + "."):
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started


def _report_seconds(report: Any) -> dict[str, float]:
    """compile_all's per-kernel seconds (which also cover cache loads), keyed like our names."""
    if not report:
        return {}
    items = report.items() if hasattr(report, "items") else report
    seconds = {}
    for name, value in items:
        name = str(name)
        if not name.startswith("numdiff."):
            name = "numdiff.kernels." + name
        seconds[name] = float(value)
    return seconds
