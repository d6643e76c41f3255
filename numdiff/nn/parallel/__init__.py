"""Data-parallel training: ``DistributedDataParallel`` (see numdiff.distributed) and ``DataParallel``."""

from numdiff.nn.parallel.data_parallel import DataParallel, data_parallel
from numdiff.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
