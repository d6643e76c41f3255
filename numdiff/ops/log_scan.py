"""logcumsumexp: the running log(sum(exp(x))) along a dimension, without overflow.

A primitive: the forward is NumPy's ``logaddexp.accumulate`` (each step log(e^a + e^b) computed
stably, so a running value never overflows or underflows where the result does not). The
gradient, dx[i] = sum_{j >= i} g[j] exp(x[i] - out[j]), is built from logcumsumexp itself
taken from the end, once for the positive and once for the negative part of g (so every
exponent stays at most 0 and nothing overflows): the backward is differentiable again.
A CUDA tensor is scanned on the host.
"""

from __future__ import annotations

import math

import numpy as np

from numdiff.autograd.function import Function
from numdiff.backend import is_host, like_host, to_host
from numdiff.ops._util import ensure_tensor, normalize_dim
from numdiff.ops.registry import register
from numdiff.ops.selection import where
from numdiff.tensor import Tensor


@register("logcumsumexp", compile="call")
class Logcumsumexp(Function):
    """out[..., j] = log(sum(exp(x[..., :j + 1]))) along `dim`."""

    @staticmethod
    def forward(ctx, x, *, dim):
        ctx.dim = dim
        if is_host(x):
            out = np.logaddexp.accumulate(x, axis=dim)
        else:
            out = like_host(np.logaddexp.accumulate(to_host(x), axis=dim), x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dims = (ctx.dim,)

        def from_the_end(values: Tensor) -> Tensor:
            return Logcumsumexp.apply(values.flip(dims), dim=ctx.dim).flip(dims)

        # log of the positive (negative) part of g, less out: -inf where there is no such part, and
        # where out is -inf (every x so far is -inf, and gets no gradient); no log of 0 is taken.
        reached = out > -math.inf
        positive = where((grad > 0) & reached, where(grad > 0, grad, 1.0).log() - out, -math.inf)
        negative = where((grad < 0) & reached, where(grad < 0, -grad, 1.0).log() - out, -math.inf)
        return ((x + from_the_end(positive)).exp() - (x + from_the_end(negative)).exp(),)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(input), dim)), computed stably.

    >>> numdiff.logcumsumexp(numdiff.tensor([0.0, 0.0, 1000.0]), dim=0)
    tensor([0.0000e+00, 6.9315e-01, 1.0000e+03])
    """
    input = ensure_tensor("logcumsumexp", input)
    if not input.is_floating_point():
        raise TypeError(f"logcumsumexp: expects a floating point tensor, got dtype {input.dtype}")
    if input.ndim == 0:
        return Logcumsumexp.apply(input.reshape(1), dim=0).reshape(())
    return Logcumsumexp.apply(input, dim=normalize_dim("logcumsumexp", dim, input.ndim))

