"""What Numba has compiled, and compiling it ahead of time.

numdiff's kernels are Numba functions compiled the first time each dtype and layout reaches them,
which makes the first call of an op slow (seconds) and later calls fast. With ``cache=True``
the machine code is also written to disk (``__pycache__`` or ``NUMBA_CACHE_DIR``), so a later
process loads it instead of compiling again.

- `warmup` runs ``numdiff.kernels.compile_all``: one tiny call per kernel and dtype, so every
  kernel is compiled (or loaded from the disk cache) up front instead of on first use.
- `compiled_kernels` lists every Numba dispatcher in numdiff.kernels with the signatures it holds,
  whether each came from the compiler or the disk cache, Numba's compile time, and the seconds
  the latest warmup spent on the kernel's first call (compiling or loading).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from numdiff import _torchscript
from numdiff._lazy import lazy_module
from numdiff._torchscript import Final as Final
from numdiff._torchscript import ScriptFunction as ScriptFunction
from numdiff._torchscript import ScriptModule as ScriptModule
from numdiff._torchscript import export as export
from numdiff._torchscript import ignore as ignore
from numdiff._torchscript import is_scripting as is_scripting
from numdiff._torchscript import is_tracing as is_tracing
from numdiff._torchscript import script as script
from numdiff._torchscript import trace as trace
from numdiff._torchscript import unused as unused

if TYPE_CHECKING:
    from numba.core.dispatcher import Dispatcher

# Numba loads when a kernel is listed, not at `import numdiff`.
numba = lazy_module("numba")

__all__ = ["KernelInfo", "KernelTable", "SignatureInfo", "compiled_kernels", "warmup"]
# PyTorch's TorchScript names that eager code touches (is_scripting, ignore, ScriptModule, ...)
__all__ += _torchscript.__all__


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
    warmup_seconds: float | None  # the latest warmup's first calls of it, summed over dtypes
    cache_path: str | None

    @property
    def compile_seconds(self) -> float:
        return sum(s.compile_seconds or 0.0 for s in self.signatures)


@dataclass
class KernelTable:
    """The result of `compiled_kernels`: a list of `KernelInfo` that prints as a table.

    `warmup_calls` holds the seconds of every first call the latest warmup made, keyed
    ``"module.kernel[dtype]"`` as ``numdiff.kernels.compile_times`` names them; a call that names
    a build rather than a dispatcher (``"optim.adam[parallel][float32]"``) is only listed there.
    """

    kernels: list[KernelInfo] = field(default_factory=list)
    warmup_calls: dict[str, float] = field(default_factory=dict)

    def __iter__(self) -> Iterator[KernelInfo]:
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


def _dispatchers_in(value: Any, depth: int = 2) -> Iterator[Dispatcher]:
    """`value` if it is a dispatcher, else the dispatchers in it when it is a dict, tuple or list
    (kernels built in pairs, such as serial and parallel builds, are kept in such tables)."""
    if isinstance(value, numba.core.dispatcher.Dispatcher):
        yield value
    elif isinstance(getattr(value, "dispatcher", None), numba.core.dispatcher.Dispatcher):
        yield value.dispatcher  # a helper kernels call by address (numdiff.kernels._kernel_address.by_address)
    elif depth and isinstance(value, dict):
        for item in value.values():
            yield from _dispatchers_in(item, depth - 1)
    elif depth and isinstance(value, (tuple, list)):
        for item in value:
            yield from _dispatchers_in(item, depth - 1)


def _dispatchers(package: str) -> list[tuple[str, Dispatcher]]:
    """Every Numba dispatcher defined in `package`, once each, named where it was defined."""
    found: dict[int, tuple[str, Dispatcher]] = {}
    for module in _kernel_modules(package):
        for value in vars(module).values():
            for dispatcher in _dispatchers_in(value):
                func = dispatcher.py_func
                if id(dispatcher) not in found and func.__module__.startswith(package):
                    found[id(dispatcher)] = (f"{func.__module__}.{func.__qualname__}", dispatcher)
    return sorted(found.values(), key=lambda item: item[0])


def _signature_info(dispatcher: Dispatcher, signature: tuple) -> SignatureInfo:
    text = "(" + ", ".join(str(t) for t in signature) + ")"
    overload = dispatcher.overloads.get(signature)
    timers = (getattr(overload, "metadata", None) or {}).get("timers", {})
    if dispatcher.stats.cache_hits.get(signature):
        return SignatureInfo(text, "disk cache", None)
    return SignatureInfo(text, "compiled", timers.get("compiler_lock"))


def _warmup_seconds(package: str, calls: dict[str, float]) -> dict[str, float]:
    """Sum the per-dtype first-call seconds ``"module.kernel[dtype]"`` per dispatcher name."""
    seconds: dict[str, float] = {}
    for key, value in calls.items():
        name = f"{package}.{key.rpartition('[')[0] or key}"
        seconds[name] = seconds.get(name, 0.0) + value
    return seconds


def compiled_kernels(package: str = "numdiff.kernels") -> KernelTable:
    """List the Numba kernels in `package`, their compiled signatures and compile/load times.

    The warmup times are read from the package's ``compile_times`` (what ``compile_all`` fills).

    >>> numdiff.warmup(("float32",), progress=False)
    >>> print(numdiff.jit.compiled_kernels())  # kernel, signature, source, seconds
    """
    calls = dict(getattr(importlib.import_module(package), "compile_times", {}))
    warmed = _warmup_seconds(package, calls)
    kernels = [
        KernelInfo(
            name=name,
            signatures=tuple(_signature_info(dispatcher, sig) for sig in dispatcher.signatures),
            warmup_seconds=warmed.get(name),
            cache_path=dispatcher.stats.cache_path,
        )
        for name, dispatcher in _dispatchers(package)
    ]
    return KernelTable(kernels, calls)


def warmup(dtypes: Iterable[str] = ("float32", "float64"), progress: bool = True) -> KernelTable:
    """Compile (or load from the disk cache) every kernel for `dtypes` now, not on first use.

    Runs ``numdiff.kernels.compile_all(dtypes, progress)`` (a tqdm bar when `progress` is true and
    tqdm is installed) and returns `compiled_kernels()`, which then holds the seconds each first
    call took.

    >>> table = numdiff.warmup(("float32",))  # a bar over the kernels
    >>> table["_conv_cores.forward_core"].warmup_seconds
    """
    dtypes = tuple(str(d).removeprefix("numdiff.") for d in dtypes)
    for dtype in dtypes:
        if dtype not in ("float32", "float64"):
            raise ValueError(f"warmup compiles float32 and float64 kernels; got dtype {dtype!r}")
    from numdiff import kernels

    kernels.compile_all(dtypes, progress)
    return compiled_kernels()


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
