"""numdiff.utils: helpers around training; ``numdiff.utils.data`` holds datasets and the DataLoader."""

from numdiff.utils import benchmark, checkpoint, data, dlpack, hooks

__all__ = ["benchmark", "checkpoint", "data", "dlpack", "hooks"]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
