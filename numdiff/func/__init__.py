"""Function transforms with torch.func's names and semantics: grad, vjp, jvp, jacrev, jacfwd,
hessian, vmap, linearize, functionalize, functional_call, stack_module_state and
replace_all_batch_norm_modules_.

>>> from numdiff.func import grad, vmap
>>> vmap(grad(lambda x: (x ** 2).sum()))(numdiff.randn(4, 3)).shape
numdiff.Size([4, 3])
"""

from numdiff._batched import BatchedTensor, VmapDataDependentError, VmapPerformanceWarning
from numdiff.func.forward_mode import jvp
from numdiff.func.functional_call import functional_call
from numdiff.func.jacobians import hessian, jacfwd, jacrev
from numdiff.func.linearize import functionalize, linearize, replace_all_batch_norm_modules_
from numdiff.func.stack_module_state import stack_module_state
from numdiff.func.transforms import TransformOutputError, grad, grad_and_value, vjp
from numdiff.func.vmap import VmapRandomnessError, vmap

__all__ = [
    "BatchedTensor",
    "TransformOutputError",
    "VmapDataDependentError",
    "VmapPerformanceWarning",
    "VmapRandomnessError",
    "functional_call",
    "functionalize",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "replace_all_batch_norm_modules_",
    "stack_module_state",
    "vjp",
    "vmap",
]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
