"""cuDNN's switches (numdiff has no cuDNN: the flags are kept and change nothing; see numdiff.backends)."""

from __future__ import annotations

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: numdiff's convolutions are its own kernels, never cuDNN."""
    return False


def version() -> None:
    """None, as PyTorch answers when it was built without cuDNN."""
    return None
