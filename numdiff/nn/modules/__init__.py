"""The layers of numdiff.nn, each a Module.

The list of layers is read from the submodules, not kept by hand: every public `Module` subclass a
submodule here defines is a layer of numdiff.nn.modules (and of numdiff.nn). A new layer class in
activation.py, say, is exported with no other edit.
"""

import importlib
import pkgutil

from numdiff.nn.modules.module import Module

# PyTorch keeps this one in torch.nn.modules.linear only (MultiheadAttention's out_proj type).
_NOT_EXPORTED = frozenset({"NonDynamicallyQuantizableLinear"})


def _layers(module) -> dict[str, type]:
    """The public Module subclasses `module` defines, by name, in definition order."""
    return {
        name: value for name, value in vars(module).items()
        if not name.startswith("_") and name not in _NOT_EXPORTED and isinstance(value, type)
        and issubclass(value, Module) and value.__module__ == module.__name__
    }  # fmt: skip


LAYERS: dict[str, type] = {}
"""Every layer class of numdiff.nn, by name, gathered from this package's submodules."""
for _info in pkgutil.iter_modules(__path__):
    if not _info.name.startswith("_"):
        LAYERS.update(_layers(importlib.import_module(f"{__name__}.{_info.name}")))

globals().update(LAYERS)
__all__ = sorted(LAYERS)
