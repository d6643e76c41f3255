"""numdiff.nn: functional ops now; modules, layers and losses build on them."""

from numdiff.nn import functional

__all__ = ["functional"]
