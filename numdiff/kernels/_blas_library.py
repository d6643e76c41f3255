"""Which library numdiff's compiled GEMM calls: SciPy's OpenBLAS (the default) or MKL (the ``mkl`` extra).

The choice is made once per process, when numdiff.kernels._blas is imported:

- ``NUMDIFF_BLAS`` unset or ``auto``: MKL when the ``mkl`` package is installed
  (``pip install numdiff[mkl]``), else SciPy's BLAS;
- ``NUMDIFF_BLAS=mkl``: MKL, and :class:`BlasLibraryError` naming the extra when it is missing;
- ``NUMDIFF_BLAS=scipy``: SciPy's BLAS even when MKL is installed.

The chosen ``sgemm``/``dgemm`` and ``sgemv``/``dgemv`` (Fortran interface, 32-bit integers: SciPy's
``cython_blas`` capsules or ``libmkl_rt``'s exports) are registered with LLVM under the names in
:data:`GEMM_SYMBOLS` and :data:`GEMV_SYMBOLS`, which :func:`numdiff.kernels._blas.gemm` calls. Compiled kernels link to
the name, not to an address, so Numba's on-disk cache stays valid from one process to the next
and across a change of library.

The factorization pieces of numdiff.kernels.linalg_blocked (``getrf``, ``potrf``, ``trsm``, ``trmm``) and
of numdiff.kernels.linalg_split (``sytrd``, ``stedc``, ``gebrd``, ``bdsdc``)
always come from SciPy's ``cython_lapack``/``cython_blas`` (the OpenBLAS numdiff holds at one thread),
registered under :data:`FACTOR_SYMBOLS` by :func:`register_factor_symbols`.

MKL is switched to its sequential threading layer and its LP64 interface before its first call:
numdiff splits products over its own Numba threads (numdiff.kernels._blas.gemm_parallel), and a
second OpenMP runtime spinning beside Numba's would take cores from it (issue 26).
"""

from __future__ import annotations

import ctypes
import glob
import importlib
import importlib.machinery
import importlib.util
import os
import site
import sys
from dataclasses import dataclass
from types import ModuleType

import scipy
from llvmlite import binding

__all__ = [
    "BlasLibrary", "BlasLibraryError", "ENVIRONMENT_VARIABLE", "FACTOR_SYMBOLS", "GEMM_SYMBOLS", "GEMV_SYMBOLS", "blas_library",
    "choose", "cython_blas", "find_mkl", "register_factor_symbols",
]

ENVIRONMENT_VARIABLE = "NUMDIFF_BLAS"
CHOICES = ("auto", "mkl", "scipy")
GEMM_SYMBOLS = {"s": "numdiff_sgemm", "d": "numdiff_dgemm"}
GEMV_SYMBOLS = {"s": "numdiff_sgemv", "d": "numdiff_dgemv"}
# Every routine taken from the chosen library, by its BLAS name: the products (gemm) and, for one-row
# or one-column products, the matrix-vector ones (gemv).
_ROUTINES = {f"{kind}gemm": symbol for kind, symbol in GEMM_SYMBOLS.items()} | {
    f"{kind}gemv": symbol for kind, symbol in GEMV_SYMBOLS.items()}
FACTOR_SYMBOLS = {f"{kind}{routine}": f"numdiff_{kind}{routine}" for kind in "sd"
                  for routine in ("getrf", "potrf", "trsm", "trmm", "sytrd", "stedc", "gebrd", "bdsdc")}

_MKL_THREADING_SEQUENTIAL = 1
_MKL_INTERFACE_LP64 = 0


class BlasLibraryError(RuntimeError):
    """The library that ``NUMDIFF_BLAS`` asks for cannot be used."""


@dataclass(frozen=True)
class BlasLibrary:
    """The GEMM library in use: its name (``"mkl"`` or ``"scipy"``), file, version and why it was chosen."""

    name: str
    path: str
    version: str
    reason: str


def environment_choice(variable: str, choices: tuple[str, ...], error: type[Exception]) -> str:
    """The value of environment variable `variable`, lower-cased, "auto" when unset or empty;
    `error` naming the variable and `choices` when it is none of them (numdiff's library switches:
    ``NUMDIFF_BLAS`` here, ``NUMDIFF_CONV_PRODUCTS`` in numdiff.kernels._conv_route)."""
    value = os.environ.get(variable, "auto").strip().lower() or "auto"
    if value not in choices:
        raise error(f"{variable}={os.environ[variable]!r} is not one of {', '.join(choices)}")
    return value


def _requested() -> str:
    return environment_choice(ENVIRONMENT_VARIABLE, CHOICES, BlasLibraryError)


def find_mkl() -> str | None:
    """The path of MKL's single dynamic library (``libmkl_rt``) installed by the ``mkl`` package, or None.

    The wheel puts it in the environment's ``lib`` folder (``Library/bin`` on Windows).
    """
    patterns = ("lib/libmkl_rt.so*", "lib/libmkl_rt*.dylib", "Library/bin/mkl_rt*.dll")
    roots = dict.fromkeys([sys.prefix, sys.exec_prefix, sys.base_prefix, site.USER_BASE or ""])
    for root in roots:
        for pattern in patterns:
            found = sorted(glob.glob(os.path.join(root, pattern)))
            if root and found:
                return found[0]
    return None


def _capsule_address(capsule: object) -> int:
    """The function pointer a Cython ``__pyx_capi__`` capsule holds."""
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return int(get_pointer(capsule, get_name(capsule)))


def cython_blas() -> ModuleType:
    """``scipy.linalg.cython_blas``, loaded without running ``scipy.linalg``'s ``__init__``.

    That package imports all of SciPy's linear algebra (0.17-0.2 s of CPU measured here, more than
    half of a first CNN step's set-up beyond Numba), while the GEMM needs only this extension
    module's capsules, which load in 4 ms. The module goes into ``sys.modules`` under its own name,
    so a later ``from scipy.linalg import cython_blas`` (or an import of it) finds it there and uses
    the same module; only the attribute spelling ``scipy.linalg.cython_blas`` is unbound on a
    ``scipy.linalg`` imported after it, since the import system binds a submodule on its package
    when it loads the submodule, not when it finds it loaded.
    """
    name = "scipy.linalg.cython_blas"
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.machinery.PathFinder.find_spec(name, [os.path.join(os.path.dirname(scipy.__file__), "linalg")])
    if spec is None:
        raise BlasLibraryError(f"SciPy {scipy.__version__} has no {name} next to {scipy.__file__}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return sys.modules.setdefault(name, module)


def _scipy_gemm(reason: str) -> tuple[dict[str, int], BlasLibrary]:
    capsules = cython_blas().__pyx_capi__
    addresses = {routine: _capsule_address(capsules[routine]) for routine in _ROUTINES}
    path = os.path.dirname(os.path.abspath(cython_blas().__file__))
    return addresses, BlasLibrary("scipy", path, _scipy_blas_version(), reason)


def _scipy_blas_version() -> str:
    return f"SciPy {scipy.__version__} (OpenBLAS)"


def _load_mkl(path: str) -> ctypes.CDLL:
    library = ctypes.CDLL(path)
    # Both must come before MKL's first computation; later calls would be ignored.
    library.MKL_Set_Interface_Layer(_MKL_INTERFACE_LP64)
    library.MKL_Set_Threading_Layer(_MKL_THREADING_SEQUENTIAL)
    return library


def _mkl_gemm(path: str, reason: str) -> tuple[dict[str, int], BlasLibrary]:
    library = _load_mkl(path)
    buffer = ctypes.create_string_buffer(256)
    library.MKL_Get_Version_String(buffer, len(buffer))
    addresses = {routine: ctypes.cast(getattr(library, routine), ctypes.c_void_p).value for routine in _ROUTINES}
    version = buffer.value.decode(errors="replace")
    return addresses, BlasLibrary("mkl", os.path.realpath(path), version, reason)


_CHOSEN: dict[str, BlasLibrary | None] = {"library": None}


def choose(requested: str, mkl_path: str | None) -> tuple[str, str]:
    """(library, reason) for a ``NUMDIFF_BLAS`` value and the MKL found (None: not installed).

    >>> choose("auto", None)
    ('scipy', 'the default (no mkl extra)')
    """
    if requested == "mkl" and mkl_path is None:
        raise BlasLibraryError(
            f"{ENVIRONMENT_VARIABLE}=mkl, but MKL is not installed (no libmkl_rt under {sys.prefix}): "
            f"install numdiff's mkl extra (pip install 'numdiff[mkl]') or unset {ENVIRONMENT_VARIABLE}"
        )
    if requested == "scipy":
        return "scipy", f"forced by {ENVIRONMENT_VARIABLE}=scipy"
    if requested == "mkl":
        return "mkl", f"forced by {ENVIRONMENT_VARIABLE}=mkl"
    if mkl_path is not None:
        return "mkl", "the mkl extra is installed"
    return "scipy", "the default (no mkl extra)"


def blas_library() -> BlasLibrary:
    """Choose the GEMM library (see the module docstring), register its symbols once, and say which it is.

    >>> blas_library().name in ("mkl", "scipy")
    True
    """
    if _CHOSEN["library"] is None:
        requested = _requested()
        mkl_path = find_mkl() if requested != "scipy" else None
        name, reason = choose(requested, mkl_path)
        addresses, library = _mkl_gemm(mkl_path, reason) if name == "mkl" else _scipy_gemm(reason)
        for routine, symbol in _ROUTINES.items():
            binding.add_symbol(symbol, addresses[routine])
        _CHOSEN["library"] = library
    return _CHOSEN["library"]


_FACTORS_REGISTERED: list[bool] = []


def register_factor_symbols() -> None:
    """Register SciPy's LAPACK and BLAS routines named in :data:`FACTOR_SYMBOLS` (both precisions) with
    LLVM, once per process, for numdiff.kernels.linalg_blocked and linalg_split.

    >>> register_factor_symbols()
    """
    if _FACTORS_REGISTERED:
        return
    # Imported here, on the first blocked factorization: scipy.linalg's __init__ costs 0.2 s (cython_blas).
    cython_lapack = importlib.import_module("scipy.linalg.cython_lapack")
    for routine, symbol in FACTOR_SYMBOLS.items():
        module = cython_blas() if routine[1:] in ("trsm", "trmm") else cython_lapack
        binding.add_symbol(symbol, _capsule_address(module.__pyx_capi__[routine]))
    _FACTORS_REGISTERED.append(True)
