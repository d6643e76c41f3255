"""`CompiledModule`: a Module whose forward runs compiled, sharing the original's Parameters."""

from __future__ import annotations

from typing import Any

from numdiff.compile.compiled import CompiledFunction
from numdiff.nn import Module


class CompiledModule(Module):
    """Wraps a Module as `_orig_mod` (as torch.compile does): same Parameter objects, compiled calls.

    Parameters, ``state_dict`` (keys prefixed ``_orig_mod.``), optimizers and ``.to()`` all see the
    original module's tensors. Switching train/eval, moving, retyping or replacing parameters,
    replacing submodules or changing a plain attribute (``eps``) retraces (compile/guards.py).

    >>> net = numdiff.compile(numdiff.nn.Linear(3, 1))
    >>> optimizer = numdiff.optim.SGD(net.parameters(), lr=0.1)
    """

    def __init__(self, module: Module, dynamic: bool = False) -> None:
        super().__init__()
        self._orig_mod = module
        self.compiled = CompiledFunction(module, dynamic=dynamic)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.compiled(*args, **kwargs)

    @property
    def compile_count(self) -> int:
        return self.compiled.compile_count
