"""``njit`` for numdiff's kernels: numba.njit whose on-disk cache repairs itself.

Numba's cache (``cache=True``) keeps, per function, an index file (``*.nbi``, a pickle of
signature -> data file) and one data file per signature (``*.nbc``, a pickle holding the machine
code). Numba unpickles them without any check, so one truncated or garbled file makes every
call of the kernel raise UnpicklingError (or EOFError, ...) until someone finds and deletes it,
and a flipped byte inside the machine code would be loaded and run.

`SelfHealingCache` is Numba's FunctionCache with these changes:

- data files carry a SHA-256 of their pickle, checked before unpickling, so damage anywhere in
  a data file is caught (files written by plain Numba fail the check once and are rewritten);
- a failure to load or rebuild an entry drops the function's cache files (its index and all its
  data files), lets Numba compile as if the cache were empty and save fresh files, and warns
  once per cache folder with a `KernelCacheWarning` naming the folder;
- it sets itself up (finds the source file and the cache folder, test-writes a file there) on the
  kernel's first compile or load, not when the kernel is defined: a process calls few of the
  kernels its imports define;
- a load from the cache does not refresh Numba's target context (every typing and lowering
  registry, and with them ``scipy.linalg``, about 0.45 s CPU in a fresh process) but only starts
  Numba's runtime (NRT), which is what loaded machine code links against. Compiling still
  refreshes the context (Numba's compiler does it itself), so a process that loads every kernel
  from the cache never pays for the compiler's set-up;
- an entry is valid for the kernel's own source file and every module of numdiff.kernels as they
  were when it was saved: Numba's stamp is the kernel's file alone, but the machine code it saves
  holds every function it calls compiled in (``_vecmath``, ``_gemm_loops``, ...), so a change to a
  callee's file left callers running the old callee from the cache (after a ``git pull`` into an
  editable install, say). The stamp adds the modification time and size of each module there.

Every ``@njit(cache=True)`` in numdiff.kernels goes through `njit` here (a test checks that).
numdiff's CUDA kernels are not cached on disk, so they need nothing of this.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
from numba.core import errors, types, typing
from numba.core.caching import FunctionCache, IndexDataCacheFile
from numba.core.dispatcher import Dispatcher
from numba.core.registry import CPUDispatcher
from numba.core.runtime import rtsys

from numdiff.kernels._kernel_address import fill_slots_named_in

__all__ = ["CachedDispatcher", "KernelCacheWarning", "SelfHealingCache", "njit"]

_DATA_MAGIC = b"numdiff-sha256\n"
_DIGEST_BYTES = hashlib.sha256().digest_size
# Machine code that hashes strings links against the hash secrets numba.cpython.hashing registers
# when imported (part of the registries a cache load no longer refreshes).
_HASH_SECRET_SYMBOL = b"_Py_HashSecret"
_warned_folders: set[str] = set()  # written under Numba's compiler lock, which every load holds


@functools.cache
def kernels_stamp() -> str:
    """A digest of the modification time and size of every module of numdiff.kernels (see the
    module docstring): part of each cache entry's stamp, so editing any of them invalidates the
    entries compiled against the old one. Taken once a process (about 0.2 ms of stat calls)."""
    folder = Path(__file__).parent
    files = []
    for path in sorted(folder.glob("*.py")):
        status = path.stat()
        files.append(f"{path.name}:{status.st_mtime_ns}:{status.st_size}")
    return hashlib.sha256("\n".join(files).encode()).hexdigest()[:16]


class KernelCacheWarning(RuntimeWarning):
    """numdiff found a damaged Numba cache entry, removed it and recompiled the kernel."""


class DamagedCacheFileError(ValueError):
    """A Numba cache data file whose checksum does not match its contents."""


class _CheckedDataFile(IndexDataCacheFile):
    """Numba's index-and-data cache files, with a checksum in front of each data file."""

    def _save_data(self, name: str, data: Any) -> None:
        payload = self._dump(data)
        with self._open_for_write(self._data_path(name)) as handle:
            handle.write(_DATA_MAGIC + hashlib.sha256(payload).digest() + payload)

    def _load_data(self, name: str) -> Any:
        path = self._data_path(name)
        with open(path, "rb") as handle:
            raw = handle.read()
        digest = raw[len(_DATA_MAGIC) : len(_DATA_MAGIC) + _DIGEST_BYTES]
        payload = raw[len(_DATA_MAGIC) + _DIGEST_BYTES :]
        if not raw.startswith(_DATA_MAGIC) or hashlib.sha256(payload).digest() != digest:
            raise DamagedCacheFileError(f"{path} fails its checksum")
        return pickle.loads(payload)


class SelfHealingCache(FunctionCache):
    """A FunctionCache that recovers from damaged cache files instead of raising, sets itself up on
    first use and loads without refreshing Numba's target context (see module)."""

    def __init__(self, py_func: Callable[..., Any]) -> None:
        self._py_func = py_func  # FunctionCache's own set-up waits for the first use (`__getattr__`)

    def __getattr__(self, name: str) -> Any:
        # Called only for attributes not set yet: the first use of any of FunctionCache's sets it up.
        if name.startswith("__") or "_set_up" in self.__dict__:
            raise AttributeError(name)
        self.__dict__["_set_up"] = True
        enabled = self.__dict__.get("_enabled", True)
        super().__init__(self._py_func)
        self._enabled = enabled
        self._cache_file = _CheckedDataFile(
            cache_path=self._cache_path,
            filename_base=self._impl.filename_base,
            source_stamp=(self._impl.locator.get_source_stamp(), kernels_stamp()),
        )
        return getattr(self, name)

    def enable(self) -> None:
        self._enabled = True

    def disable(self) -> None:
        self._enabled = False

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        """The cached compile result for `sig`, or None; Numba's version without its
        ``target_context.refresh()`` (see module)."""
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    def _load_overload(self, sig: Any, target_context: Any) -> Any:
        try:
            if not self._enabled:
                return None
            data = self._cache_file.load(self._index_key(sig, target_context.codegen()))
            if data is None:
                return None
            code = _object_code(data)
            if _HASH_SECRET_SYMBOL in code:
                import numba.cpython.hashing  # noqa: F401 - registers the symbols that code links against
            if not fill_slots_named_in(code):
                return None  # a callee by address has no build to load: compile the caller again
            return self._impl.rebuild(target_context, data)
        except Exception as err:  # anything a damaged pickle or object file can raise
            self._drop_damaged_files(err)
            return None  # Numba compiles, then saves fresh files

    def has_entry(self, sig: Any, target_context: Any) -> bool:
        """Whether the cache holds machine code for `sig` (its index lists it; nothing is loaded)."""
        if not self._enabled:
            return False
        try:
            return self._index_key(sig, target_context.codegen()) in self._cache_file._load_index()
        except Exception:  # a damaged index: the call would compile (and heal it)
            return False

    def _save_overload(self, sig: Any, data: Any) -> None:
        try:
            super()._save_overload(sig, data)
        except Exception as err:  # saving reads the index first, which may have been damaged since
            self._drop_damaged_files(err)
            super()._save_overload(sig, data)

    def _drop_damaged_files(self, err: Exception) -> None:
        base = self._impl.filename_base
        own_files = re.compile(rf"{re.escape(base)}\.(nbi|\d+\.nbc)")
        try:
            names = [name for name in os.listdir(self._cache_path) if own_files.fullmatch(name)]
        except OSError:
            names = []
        for name in names:
            try:
                os.unlink(os.path.join(self._cache_path, name))
            except OSError:
                pass  # already removed by another process, or not ours to remove: compiling still works
        if self._cache_path not in _warned_folders:
            _warned_folders.add(self._cache_path)
            warnings.warn(
                f"numdiff: the Numba cache in {self._cache_path} had a damaged entry for {base} "
                f"({type(err).__name__}: {str(err)[:200]}); numdiff removed that function's cache files "
                "and recompiled it. Other damaged entries in this folder are repaired the same way, "
                "without further warnings. (Entries written by plain Numba or an older numdiff count as "
                "damaged once.)",
                KernelCacheWarning,
                stacklevel=2,
            )


def _object_code(data: tuple) -> bytes:
    """The machine code in a cache entry: ``(library state, ...)``, the state being ``(name,
    "object", (object code, bitcode))`` for a CPU library (an empty string for anything else)."""
    state = data[0]
    if isinstance(state, tuple) and len(state) == 3 and state[1] == "object":
        return state[2][0]
    return b""


class CachedDispatcher(CPUDispatcher):
    """Numba's CPU dispatcher for a kernel with a `SelfHealingCache`: the extension scan waits for a
    compile (see module), and a call from another kernel with a constant flag or integer compiles
    one build for the plain type (see :meth:`get_call_template`)."""

    def _compilation_chain_init_hook(self) -> None:
        # Numba calls this before typing the arguments of a call it has no machine code for, to load
        # third-party extensions; numdiff's kernels take arrays and numbers, which need none, and the
        # compiler's CPU target loads every extension when it refreshes (numba.core.cpu), before
        # it types a kernel. So a call served from the disk cache skips the scan.
        pass

    def ready_for(self, *args: Any) -> bool:
        """Whether a call with `args` would run without compiling: machine code for their types is
        in memory or in the disk cache. numdiff.compile times alternative kernels only when so."""
        sig = tuple(self.typeof_pyval(a) for a in args)
        return sig in self.overloads or self._cache.has_entry(sig, self.targetctx)

    def get_call_template(self, args: Any, kws: Any) -> Any:
        """Numba's typing of a call from compiled code, compiling for plain ``bool`` and ``int64``
        where the caller passes constants.

        Numba types a constant argument (``filter_transform(w, True, u)``) as a literal and compiles
        the callee once per value (Literal[bool](True), Literal[bool](False)), each build linking
        all the callee's own callees again: with an empty cache the Winograd forward and input
        gradient built filter_transform twice (0.2-0.4 s CPU). The build for the plain type serves every constant (a
        literal converts to its plain type at the call), and LLVM still folds the constant where it
        inlines the callee. A kernel whose typing needs the value itself (``literally``, a tuple
        index) fails to type for the plain type and is compiled for the literal, as Numba would."""
        pysig, folded = self._compiler.fold_argument_types(args, kws)
        plain = tuple(
            types.unliteral(a) if isinstance(a, (types.BooleanLiteral, types.IntegerLiteral)) else a for a in folded
        )
        if plain == tuple(folded) or not self._can_compile:
            return super().get_call_template(args, kws)
        try:
            self.compile(plain)
        except (errors.TypingError, errors.ForceLiteralArg):
            return super().get_call_template(args, kws)
        name = self.py_func.__name__
        template = typing.make_concrete_template(f"CallTemplate({name})", key=name, signatures=self.nopython_signatures)
        return template, pysig, plain, {}


def njit(function: Callable[..., Any] | None = None, **options: Any) -> Any:
    """numba.njit (used as ``@njit`` or ``@njit(**options)``), with `SelfHealingCache` as the disk
    cache when ``cache=True``.

    >>> @njit(cache=True)
    ... def double(x):
    ...     return 2 * x
    >>> double(3)
    6
    """

    def compile_lazily(func: Callable[..., Any]) -> Dispatcher:
        # Numba's own cache=True would set up a FunctionCache (and test-write its folder) here, only
        # to be replaced.
        if not options.get("cache") or numba.config.DISABLE_JIT:
            return numba.njit(**options)(func)
        # What numba.njit(**options) builds, as a CachedDispatcher, and without its FunctionCache.
        targetoptions = {name: value for name, value in options.items() if name not in ("cache", "locals")}
        targetoptions.update(nopython=True, boundscheck=options.get("boundscheck"))
        dispatcher = CachedDispatcher(py_func=func, locals=dict(options.get("locals", {})),
                                      targetoptions=targetoptions)
        dispatcher._cache = SelfHealingCache(func)
        return dispatcher

    return compile_lazily if function is None else compile_lazily(function)


def _prefer_omp() -> None:
    """Keep Numba on its OpenMP pool, the one numdiff._threads.SPIN_COUNT was measured for, when TBB
    is also installed (the ``mkl`` extra brings the ``tbb`` package, which Numba would otherwise
    prefer), unless the user chose a layer (``NUMBA_THREADING_LAYER`` or
    ``NUMBA_THREADING_LAYER_PRIORITY``). Every kernel module imports this one before its first
    parallel launch, which is when Numba picks the layer."""
    if "NUMBA_THREADING_LAYER" not in os.environ and "NUMBA_THREADING_LAYER_PRIORITY" not in os.environ:
        numba.config.THREADING_LAYER_PRIORITY = ["omp", "tbb", "workqueue"]


_prefer_omp()
