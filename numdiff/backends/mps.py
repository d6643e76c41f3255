"""Apple's Metal backend, which numdiff does not have."""


def is_available() -> bool:
    """False: numdiff has no MPS device."""
    return False


def is_built() -> bool:
    """False: numdiff has no MPS device."""
    return False
