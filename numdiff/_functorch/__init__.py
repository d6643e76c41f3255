"""``torch._functorch``'s module paths, for the legacy ``functorch`` package (which imports them
from torch) and for programs that import them directly; each maps onto numdiff.func.

>>> from numdiff._functorch.make_functional import make_functional
"""

from numdiff._functorch import (
    apis,
    batch_norm_replacement,
    deprecated,
    eager_transforms,
    make_functional,
    python_key,
    vmap,
)

__all__ = ["apis", "batch_norm_replacement", "deprecated", "eager_transforms", "make_functional", "python_key", "vmap"]


def __dir__() -> list[str]:
    return sorted(__all__)
