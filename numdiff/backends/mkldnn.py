"""oneDNN's switch (numdiff has no oneDNN path: the flag is kept and changes nothing)."""

enabled = True


def is_available() -> bool:
    """False: numdiff's CPU kernels are its own Numba functions."""
    return False
