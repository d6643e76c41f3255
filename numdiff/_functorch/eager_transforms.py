"""``torch._functorch.eager_transforms``: the autodiff transforms, on numdiff.func.

>>> from numdiff._functorch.eager_transforms import jacrev
"""

from numdiff.func import functionalize, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp

__all__ = ["functionalize", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "vjp"]


def __dir__() -> list[str]:
    return sorted(__all__)
