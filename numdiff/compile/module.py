"""`CompiledModule`: a Module whose forward runs compiled, sharing the original's Parameters."""

from __future__ import annotations

from typing import Any

from numdiff.compile.compiled import CompiledFunction
from numdiff.nn import Module


class CompiledModule(Module):
    """Wraps a Module as `_orig_mod` (as torch.compile does): same Parameter objects, compiled calls.

    Parameters, ``state_dict`` (keys prefixed ``_orig_mod.``), optimizers and ``.to()`` all see the
    original module's tensors. Switching train/eval, moving or retyping parameters retraces.

    >>> net = numdiff.compile(numdiff.nn.Linear(3, 1))
    >>> optimizer = numdiff.optim.SGD(net.parameters(), lr=0.1)
    """

    def __init__(self, module: Module, dynamic: bool = False) -> None:
        super().__init__()
        self._orig_mod = module
        # Walking the module tree costs ~10 us per module on every call; it is walked once.
        # (Replacing a submodule after compiling is not seen: compile the changed module again.)
        object.__setattr__(self, "_module_list", list(module.modules()))
        self.compiled = CompiledFunction(module, dynamic=dynamic, key_extra=self._state_key)

    def _state_key(self) -> tuple:
        # Training flags steer dropout and batch norm; replaced buffers or Parameters must not be
        # read stale.
        modules = self._module_list
        return (
            tuple(m.training for m in modules),
            tuple(id(b) for m in modules for b in m._buffers.values()),
            tuple(id(p) for m in modules for p in m._parameters.values()),
        )

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.compiled(*args, **kwargs)

    @property
    def compile_count(self) -> int:
        return self.compiled.compile_count
