"""Collectives that autograd can differentiate through (``numdiff.distributed.nn.functional``)."""

from numdiff.distributed.nn import functional

__all__ = ["functional"]
