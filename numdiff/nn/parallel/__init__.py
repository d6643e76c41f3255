"""Data-parallel training: ``numdiff.nn.parallel.DistributedDataParallel`` (see numdiff.distributed)."""

from numdiff.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
