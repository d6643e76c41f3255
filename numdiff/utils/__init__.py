"""numdiff.utils: helpers around training; ``numdiff.utils.data`` holds datasets and the DataLoader."""

from numdiff.utils import benchmark, data, dlpack

__all__ = ["benchmark", "data", "dlpack"]
