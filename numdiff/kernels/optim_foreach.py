"""Optimizer updates of a whole parameter group in one kernel call (PyTorch's "foreach" idea).

One call per parameter cost a Python launch each (argument checks, tuple packing, Numba's
dispatch: about 11 us), which for a small model was more than the update itself. Here an
optimizer collects its group into a :class:`ForeachUpdate` and runs it once: a serial Numba loop
over the parameters that calls the same per-parameter loop nests as :mod:`numdiff.kernels.optim`
(``CPU_KERNELS[name].serial``), so the arithmetic is shared and identical. (Numba's disk cache
links those loops into these kernels' cached code and only notices changes to this file: a change
to the loops in optim.py must touch this file too.)

How the arrays reach the kernel: Numba takes no list of arrays of different lengths without
building a typed list (measured ~3 us per element, more than the launches it replaces), so each
row of ``addresses`` holds the data addresses of one parameter's arrays (param, grad and up to
three state buffers) and ``lengths`` their element counts; the kernel views them with
``numba.carray``. :meth:`ForeachUpdate.add` checks every array first (on the CPU, float, flat,
contiguous, of the parameter's dtype and length or empty where unused) and keeps a reference to
each until the call has returned, so no address outlives its array.

Parameters of at least ``PARALLEL_MIN_ELEMENTS`` elements, and arrays on a CUDA device, are
updated one by one through :func:`numdiff.kernels.optim_steps.run_kernel` (threads, or one CUDA
launch per parameter).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from numba import carray, types
from numba.extending import intrinsic

from numdiff.kernels import optim
from numdiff.kernels._self_healing_cache import njit
from numdiff.kernels.optim_steps import run_kernel

__all__ = ["ForeachUpdate"]

SLOTS = 5
"""Arrays per parameter row: param, grad, then up to three state buffers (0 address when absent)."""

_ARITY = {"sgd": 3, "adam": 5, "rmsprop": 5, "adagrad": 3}


@intrinsic
def _pointer_like(typingctx, address, like):
    """``address`` (int64) as a pointer to ``like``'s dtype."""
    if not isinstance(like, types.Array):
        return None
    pointer = types.CPointer(like.dtype)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(pointer))

    return pointer(types.int64, like), codegen


@njit(cache=True, inline="always")
def _view(address, length, like):
    return carray(_pointer_like(address, like), length)


_SGD, _ADAM, _RMSPROP, _ADAGRAD = (optim.CPU_KERNELS[n].serial for n in ("sgd", "adam", "rmsprop", "adagrad"))


@njit(cache=True)
def sgd_foreach(addresses, lengths, hyper, like, flags):
    """for each parameter row j: the SGD loop nest of numdiff.kernels.optim on row j's arrays.

    hyper (P, 5): lr, momentum, dampening, weight_decay, first_step (1.0 or 0.0);
    flags: (nesterov, maximize).
    """
    for j in range(addresses.shape[0]):
        a, n, h = addresses[j], lengths[j], hyper[j]
        _SGD(
            _view(a[0], n[0], like), _view(a[1], n[1], like), _view(a[2], n[2], like),
            (h[0], h[1], h[2], h[3]), (flags[0], flags[1], h[4] != 0.0),
        )  # fmt: skip


@njit(cache=True)
def adam_foreach(addresses, lengths, hyper, like, flags):
    """for each parameter row j: the Adam loop nest on row j's arrays. hyper (P, 10) as
    adam_step's h (its step size and bias correction are per parameter); flags as its f."""
    for j in range(addresses.shape[0]):
        a, n, h = addresses[j], lengths[j], hyper[j]
        _ADAM(
            _view(a[0], n[0], like), _view(a[1], n[1], like), _view(a[2], n[2], like),
            _view(a[3], n[3], like), _view(a[4], n[4], like),
            (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9]), flags,
        )  # fmt: skip


@njit(cache=True)
def rmsprop_foreach(addresses, lengths, hyper, like, flags):
    """for each parameter row j: the RMSprop loop nest on row j's arrays; hyper (P, 5) and
    flags as rmsprop_step's h and f."""
    for j in range(addresses.shape[0]):
        a, n, h = addresses[j], lengths[j], hyper[j]
        _RMSPROP(
            _view(a[0], n[0], like), _view(a[1], n[1], like), _view(a[2], n[2], like),
            _view(a[3], n[3], like), _view(a[4], n[4], like), (h[0], h[1], h[2], h[3], h[4]), flags,
        )  # fmt: skip


@njit(cache=True)
def adagrad_foreach(addresses, lengths, hyper, like, flags):
    """for each parameter row j: the Adagrad loop nest on row j's arrays; hyper (P, 3) and
    flags as adagrad_step's h and f."""
    for j in range(addresses.shape[0]):
        a, n, h = addresses[j], lengths[j], hyper[j]
        _ADAGRAD(_view(a[0], n[0], like), _view(a[1], n[1], like), _view(a[2], n[2], like), (h[0], h[1], h[2]), flags)


FOREACH_KERNELS = {"sgd": sgd_foreach, "adam": adam_foreach, "rmsprop": rmsprop_foreach, "adagrad": adagrad_foreach}


class ForeachUpdate:
    """One optimizer step over a parameter group, collected parameter by parameter and run in
    one kernel call per dtype.

    `name` is ``"sgd"``, ``"adam"``, ``"rmsprop"`` or ``"adagrad"``; `flags` the group's boolean
    options in that kernel's order (see numdiff.kernels.optim, without SGD's first_step, which
    is per parameter and goes last in its hyper row).

    >>> update = ForeachUpdate("adagrad", (False,))
    >>> p, g, s = np.ones(2), np.ones(2), np.zeros(2)
    >>> update.add((p, g, s), (0.1, 1e-10, 0.0)); update.run(); p.round(6)
    array([0.9, 0.9])
    """

    def __init__(self, name: str, flags: tuple[bool, ...]) -> None:
        if name not in FOREACH_KERNELS:
            raise ValueError(f"ForeachUpdate: unknown optimizer {name!r}; known: {sorted(FOREACH_KERNELS)}")
        self.name = name
        self.flags = tuple(bool(f) for f in flags)
        self._rows: dict[np.dtype, list[tuple[tuple[Any, ...], tuple[float, ...]]]] = {}
        self._one_by_one: list[tuple[tuple[Any, ...], tuple[float, ...]]] = []

    def add(self, arrays: tuple[Any, ...], hyper: tuple[float, ...]) -> None:
        """Queue one parameter: `arrays` = (param, grad, *state buffers) as the per-parameter
        launcher takes them (an unused buffer empty), `hyper` its h tuple."""
        op = f"{self.name}_foreach"
        if len(arrays) != _ARITY[self.name]:
            raise ValueError(f"{op}: expected {_ARITY[self.name]} arrays per parameter, got {len(arrays)}")
        param = arrays[0]
        kind, dtype, n = type(param), param.dtype, param.size
        if dtype.type not in (np.float32, np.float64):
            raise TypeError(f"{op}: param must be float32 or float64, got {dtype}")
        for index, arr in enumerate(arrays):
            if type(arr) is not kind or arr.dtype != dtype or arr.ndim != 1 or not arr.flags.c_contiguous:
                raise TypeError(
                    f"{op}: array {index} of a parameter must be a flat contiguous {dtype} {kind.__name__} "
                    f"like the parameter, got {type(arr).__name__} {getattr(arr, 'dtype', '')} "
                    f"shape {getattr(arr, 'shape', '')}"
                )
            if arr.size not in (n, 0) or (index < 2 and arr.size != n):
                raise ValueError(f"{op}: array {index} has {arr.size} elements but the parameter has {n}")
        if kind is np.ndarray and n < optim.PARALLEL_MIN_ELEMENTS:
            self._rows.setdefault(dtype, []).append((arrays, hyper))
        else:
            self._one_by_one.append((arrays, hyper))

    def run(self) -> None:
        """Update every queued parameter in place."""
        for dtype, rows in self._rows.items():
            addresses = np.zeros((len(rows), SLOTS), np.int64)
            lengths = np.zeros((len(rows), SLOTS), np.int64)
            for j, (arrays, _) in enumerate(rows):
                for k, arr in enumerate(arrays):
                    if arr.size:
                        addresses[j, k] = _address(arr)
                        lengths[j, k] = arr.size
            # Adam's update runs in float32 for float32 parameters, as run_kernel's does one by one.
            hyper_dtype = np.float32 if self.name == "adam" and dtype == np.float32 else np.float64
            hyper = np.array([h for _, h in rows], hyper_dtype)
            # `rows` holds every array until this call returns, so every address stays valid.
            FOREACH_KERNELS[self.name](addresses, lengths, hyper, np.empty(0, dtype), self.flags)
        for arrays, hyper in self._one_by_one:
            flags = self.flags + ((bool(hyper[4]),) if self.name == "sgd" else ())
            run_kernel(self.name, arrays, hyper[:4] if self.name == "sgd" else hyper, flags)
        self._rows.clear()
        self._one_by_one.clear()


def _address(array: np.ndarray) -> int:
    """The address of a flat contiguous array's first element. Through the buffer protocol for a
    writable array: ``array.ctypes.data`` builds a ctypes helper object each time and cost four
    times as much (2.3 against 0.5 us, three arrays per parameter and step)."""
    if array.flags.writeable:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    return array.ctypes.data
