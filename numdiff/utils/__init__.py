"""numdiff.utils: helpers around training; ``numdiff.utils.data`` holds datasets and the DataLoader."""

from numdiff.utils import data

__all__ = ["data"]
