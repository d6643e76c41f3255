"""roll: a primitive whose backward is itself with the shifts negated."""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._ground.args import is_int
from numdiff.autograd.function import Function
from numdiff.ops._util import ensure_tensor, int_sequence, normalize_dim
from numdiff.ops.registry import register
from numdiff.tensor import Tensor


@register("roll", compile="call")
class Roll(Function):
    """out[..., (i + shift) % n, ...] = x[..., i, ...] along each of `dims`; the gradient is the
    incoming gradient rolled back by the same shifts.

    Each dim costs one copy (two slices joined), where indexing with a wrapped arange (the route
    before) cost a gather forward and a scatter-add backward: 10x PyTorch on (32, 64, 16, 16).
    """

    @staticmethod
    def forward(ctx, x, *, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        for shift, dim in zip(shifts, dims):
            cut = x.shape[dim] - shift
            lead = (slice(None),) * dim
            x = np.concatenate([x[lead + (slice(cut, None),)], x[lead + (slice(0, cut),)]], axis=dim)
        return x

    @staticmethod
    def backward(ctx, grad):
        shifts = tuple((grad.shape[d] - s) % grad.shape[d] for s, d in zip(ctx.shifts, ctx.dims))
        return (Roll.apply(grad, shifts=shifts, dims=ctx.dims),)


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Rotate elements along `dims` by `shifts` (those leaving one end come back at the other);
    with dims None the flattened tensor is rolled and reshaped back.

    >>> numdiff.roll(numdiff.tensor([1, 2, 3, 4]), 1)
    tensor([4, 1, 2, 3])
    """
    input = ensure_tensor("roll", input)
    shift_list = [int(shifts)] if is_int(shifts) else list(int_sequence("roll", "shifts", shifts))
    if dims is None:
        if len(shift_list) != 1:
            raise ValueError(f"roll: with dims=None, shifts must be a single integer, got {shifts!r}")
        if input.ndim == 0:
            return input.clone()
        return roll(input.reshape(-1), shift_list[0], 0).reshape(tuple(input.shape))
    dim_list = [int(dims)] if is_int(dims) else list(int_sequence("roll", "dims", dims))
    dim_list = [normalize_dim("roll", d, input.ndim) for d in dim_list]
    if len(shift_list) != len(dim_list):
        raise ValueError(f"roll: shifts {list(shift_list)} and dims {list(dim_list)} must have the same length")
    # Shifts along one dim add up; a shift that wraps whole (or an empty dim) moves nothing.
    total: dict[int, int] = {}
    for shift, dim in zip(shift_list, dim_list):
        total[dim] = total.get(dim, 0) + shift
    kept = {d: s % input.shape[d] for d, s in total.items() if input.shape[d] and s % input.shape[d]}
    if not kept:
        return input.clone()
    return Roll.apply(input, shifts=tuple(kept.values()), dims=tuple(kept))
