"""Data-parallel training: ``numdiff.nn.parallel.DistributedDataParallel`` (see numdiff.distributed)
and the single-process ``DataParallel``."""

from numdiff.nn.parallel.data_parallel import DataParallel
from numdiff.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
