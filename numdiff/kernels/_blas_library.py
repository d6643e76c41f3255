"""Which library numdiff's compiled GEMM calls: SciPy's OpenBLAS (the default) or MKL (the ``mkl`` extra).

The choice is made once per process, when numdiff.kernels._blas is imported:

- ``NUMDIFF_BLAS`` unset or ``auto``: MKL when the ``mkl`` package is installed
  (``pip install numdiff[mkl]``), else SciPy's BLAS;
- ``NUMDIFF_BLAS=mkl``: MKL, and :class:`BlasLibraryError` naming the extra when it is missing;
- ``NUMDIFF_BLAS=scipy``: SciPy's BLAS even when MKL is installed.

The chosen ``sgemm``/``dgemm`` (Fortran interface, 32-bit integers: SciPy's ``cython_blas``
capsules or ``libmkl_rt``'s exports) are registered with LLVM under the names in
:data:`GEMM_SYMBOLS`, which :func:`numdiff.kernels._blas.gemm` calls. Compiled kernels link to
the name, not to an address, so Numba's on-disk cache stays valid from one process to the next
and across a change of library.

The factorization pieces of numdiff.kernels.linalg_blocked (``getrf``, ``potrf`` and ``trsm``)
always come from SciPy's ``cython_lapack``/``cython_blas`` (the OpenBLAS numdiff holds at one thread),
registered under :data:`FACTOR_SYMBOLS` by :func:`register_factor_symbols`.

MKL is switched to its sequential threading layer and its LP64 interface before its first call:
numdiff splits products over its own Numba threads (numdiff.kernels._blas.gemm_parallel), and a
second OpenMP runtime spinning beside Numba's would take cores from it (issue 26).
"""

from __future__ import annotations

import ctypes
import glob
import os
import site
import sys
from dataclasses import dataclass

import scipy
import scipy.linalg.cython_blas as _cython_blas
import scipy.linalg.cython_lapack as _cython_lapack
from llvmlite import binding

__all__ = [
    "BlasLibrary", "BlasLibraryError", "ENVIRONMENT_VARIABLE", "FACTOR_SYMBOLS", "GEMM_SYMBOLS", "blas_library",
    "choose", "find_mkl", "register_factor_symbols",
]

ENVIRONMENT_VARIABLE = "NUMDIFF_BLAS"
CHOICES = ("auto", "mkl", "scipy")
GEMM_SYMBOLS = {"s": "numdiff_sgemm", "d": "numdiff_dgemm"}
FACTOR_SYMBOLS = {f"{kind}{routine}": f"numdiff_{kind}{routine}" for kind in "sd" for routine in ("getrf", "potrf", "trsm")}

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


def _requested() -> str:
    value = os.environ.get(ENVIRONMENT_VARIABLE, "auto").strip().lower() or "auto"
    if value not in CHOICES:
        raise BlasLibraryError(
            f"{ENVIRONMENT_VARIABLE}={os.environ[ENVIRONMENT_VARIABLE]!r} is not one of {', '.join(CHOICES)}"
        )
    return value


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


def _scipy_gemm(reason: str) -> tuple[dict[str, int], BlasLibrary]:
    addresses = {kind: _capsule_address(_cython_blas.__pyx_capi__[f"{kind}gemm"]) for kind in GEMM_SYMBOLS}
    path = os.path.dirname(os.path.abspath(_cython_blas.__file__))
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
    addresses = {kind: ctypes.cast(getattr(library, f"{kind}gemm"), ctypes.c_void_p).value
                 for kind in GEMM_SYMBOLS}
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
        for kind, symbol in GEMM_SYMBOLS.items():
            binding.add_symbol(symbol, addresses[kind])
        _CHOSEN["library"] = library
    return _CHOSEN["library"]


_FACTORS_REGISTERED: list[bool] = []


def register_factor_symbols() -> None:
    """Register SciPy's ``getrf``, ``potrf`` and ``trsm`` (both precisions) with LLVM under
    :data:`FACTOR_SYMBOLS`, once per process, for numdiff.kernels.linalg_blocked.

    >>> register_factor_symbols()
    """
    if _FACTORS_REGISTERED:
        return
    for routine, symbol in FACTOR_SYMBOLS.items():
        module = _cython_blas if routine.endswith("trsm") else _cython_lapack
        binding.add_symbol(symbol, _capsule_address(module.__pyx_capi__[routine]))
    _FACTORS_REGISTERED.append(True)
