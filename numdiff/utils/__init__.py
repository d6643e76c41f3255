"""numdiff.utils: helpers around training; ``numdiff.utils.data`` holds datasets and the DataLoader."""

from numdiff.utils import data, dlpack

__all__ = ["data", "dlpack"]
