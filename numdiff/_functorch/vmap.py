"""``torch._functorch.vmap``: vmap, on numdiff.func.

>>> from numdiff._functorch.vmap import vmap
"""

from numdiff.func import vmap

__all__ = ["vmap"]


def __dir__() -> list[str]:
    return sorted(__all__)
