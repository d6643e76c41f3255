"""``torch._functorch.deprecated``: functorch's original top-level API, on numdiff.func.

>>> from numdiff._functorch.deprecated import vmap, make_functional
"""

from numdiff._functorch.make_functional import (
    combine_state_for_ensemble,
    make_functional,
    make_functional_with_buffers,
)
from numdiff.func import functionalize, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp, vmap

__all__ = [
    "combine_state_for_ensemble",
    "functionalize",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "make_functional",
    "make_functional_with_buffers",
    "vjp",
    "vmap",
]


def __dir__() -> list[str]:
    return sorted(__all__)
