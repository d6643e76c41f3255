"""How many threads numdiff's CPU kernels use: ``numdiff.set_num_threads`` / ``get_num_threads``.

One number governs both thread pools in the process. Numba's pool runs every parallel kernel
with that many threads; BLAS products are split into that many blocks, one single-threaded
SciPy OpenBLAS call per Numba thread (numdiff.kernels._blas explains why OpenBLAS never runs its
own pool next to Numba's), so setting the count here also pins OpenBLAS to one thread.
Kernels with little work run on the calling thread whatever the count (numdiff.kernels._parallel).
"""

from __future__ import annotations

import numba

__all__ = ["get_num_threads", "set_num_threads"]


def set_num_threads(n: int) -> None:
    """Use `n` threads for numdiff's CPU kernels (Numba's pool and the BLAS split), as
    ``torch.set_num_threads``. At most ``numba.config.NUMBA_NUM_THREADS`` (the pool's size, fixed
    at start-up by the ``NUMBA_NUM_THREADS`` environment variable; the core count by default).
    Like Numba's setting, it applies to the calling thread.

    >>> numdiff.set_num_threads(1); numdiff.get_num_threads()
    1
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_num_threads: expected an int, got {type(n).__name__}")
    limit = numba.config.NUMBA_NUM_THREADS
    if not 1 <= n <= limit:
        raise ValueError(
            f"set_num_threads: n must be between 1 and {limit} (the thread pool's size, set by the "
            f"NUMBA_NUM_THREADS environment variable at start-up), got {n}"
        )
    from numdiff.kernels._blas import prepare_blas

    numba.set_num_threads(n)
    prepare_blas()  # holds SciPy's OpenBLAS at one thread per call


def get_num_threads() -> int:
    """The number of threads numdiff's CPU kernels use (see :func:`set_num_threads`).

    >>> numdiff.get_num_threads() >= 1
    True
    """
    return numba.get_num_threads()
