"""numdiff.nn: Module, Parameter, layers, losses, initialisation and the functional API.

>>> import numdiff.nn as nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
>>> loss = nn.CrossEntropyLoss()(model(numdiff.randn(2, 4)), numdiff.tensor([0, 2]))
"""

from numdiff.nn import (
    functional,
    init,
    parallel,  # noqa: E402 - builds on the modules above
    utils,  # noqa: E402 - utils builds on the modules above
)
from numdiff.nn.modules import LAYERS
from numdiff.nn.parallel import DataParallel
from numdiff.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

# Every layer (read from numdiff.nn.modules' submodules), DataParallel, the parameter types and the
# subpackages.
globals().update(LAYERS)
__all__ = [
    *sorted(LAYERS), "DataParallel", "Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter",
    "functional", "init", "parallel", "utils",
]  # fmt: skip


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
