"""Differentiable collectives: `all_reduce` whose backward is an all_reduce of the gradient.

If every rank computes a loss from ``y = all_reduce(x)``, the gradient of the sum of the ranks'
losses with respect to one rank's `x` is the sum over ranks of their gradients with respect to
`y`: backward all-reduces the incoming gradient. SyncBatchNorm computes its global batch
statistics with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.autograd.function import Function
from numdiff.backend import like_host, to_host
from numdiff.distributed._group import current, mpi
from numdiff.distributed.collectives import ReduceOp, wait_for
from numdiff.tensor import Tensor


def _summed(x: Tensor, comm: Any) -> Tensor:
    data = x._data
    host = np.ascontiguousarray(to_host(data))
    result = np.empty_like(host)
    wait_for("all_reduce", comm.Iallreduce(host, result, mpi().SUM))
    result = like_host(result, data)
    return Tensor._wrap(result, None, None)


class _AllReduceSum(Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, comm: Any = None) -> Tensor:
        ctx.comm = comm
        return _summed(x, comm)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        return (_AllReduceSum.apply(grad, comm=ctx.comm),)


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None) -> Tensor:
    """Out of place: the sum (or average) of `tensor` over ranks, recorded for backward.

    >>> total = numdiff.distributed.nn.functional.all_reduce(local_sum)
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"all_reduce: expected a Tensor, got {type(tensor).__name__}")
    if op not in (ReduceOp.SUM, ReduceOp.AVG):
        raise ValueError(f"all_reduce: only ReduceOp.SUM and ReduceOp.AVG are differentiable, got {op}")
    if group is not None:
        raise ValueError(f"all_reduce: only the default process group is supported, got {group!r}")
    pg = current("all_reduce")
    out = _all_reduce_sum(tensor, pg.comm)
    return out / pg.size if op is ReduceOp.AVG else out


def _all_reduce_sum(tensor: Tensor, comm: Any) -> Tensor:
    """The differentiable sum over ranks on communicator `comm`."""
    return _AllReduceSum.apply(tensor, comm=comm)
