"""Whether numdiff runs kernels in parallel on CPU threads (Numba's threading layer)."""


def is_available() -> bool:
    """True: numdiff's CPU kernels run in parallel through Numba (``numba.set_num_threads``)."""
    return True
