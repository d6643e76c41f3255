"""PyTorch functions that are compositions of numdiff's ops: each is a few differentiable ops, so
it needs no backward of its own, and every transform (grad, vmap, compile) sees through it.

The family: angle conversions (deg2rad), sign bits and IEEE helpers (signbit, copysign, fmax),
products that are matmuls in other words (mv, addr, vdot, addbmm), statistics (cov, corrcoef,
quantile, aminmax), integration (trapezoid), and index writes (index_fill, index_copy,
masked_scatter, put). Each validates its arguments and names itself in the error.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from numdiff import _dtype as dtypes
from numdiff._torch_misc import result_type
from numdiff.amp import casts_on
from numdiff.autograd.grad_mode import no_grad
from numdiff.ops import (
    arithmetic,
    diagonals,
    linalg,
    logical,
    products,
    reduction,
    selection,
    shape,
    unary,
)
from numdiff.ops._util import as_default_float, ensure_tensor
from numdiff.ops.elementwise import PUBLIC as RULES
from numdiff.tensor import Tensor

aminmax_result = namedtuple("aminmax", ["min", "max"])


def _floating(op: str, input: Any) -> Tensor:
    input = ensure_tensor(op, input)
    return input if input.is_floating_point() else as_default_float(input)


def deg2rad(input: Tensor) -> Tensor:
    """Angles in degrees to radians (integers become the default float dtype)."""
    return arithmetic.mul(_floating("deg2rad", input), math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:
    """Angles in radians to degrees (integers become the default float dtype)."""
    return arithmetic.mul(_floating("rad2deg", input), 180.0 / math.pi)


def positive(input: Tensor) -> Tensor:
    """`input` itself, as unary plus; refused for bool tensors, as in PyTorch."""
    input = ensure_tensor("positive", input)
    if input.dtype is dtypes.bool_:
        raise TypeError("positive: the unary + is not supported for bool tensors")
    return input


def float_power(input: Any, exponent: Any) -> Tensor:
    """`input` ** `exponent` computed in float64, whatever the operands' dtypes."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power: expected at least one Tensor operand")
    base = input.double() if isinstance(input, Tensor) else float(input)
    power = exponent.double() if isinstance(exponent, Tensor) else float(exponent)
    return arithmetic.pow(base, power)


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise maximum, where a NaN loses to a number (NaN only where both are NaN)."""
    input, other = ensure_tensor("fmax", input), ensure_tensor("fmax", other)
    # On a tie the gradient goes to input alone, as PyTorch's fmax has it (maximum splits it).
    return selection.where(logical.logical_or(logical.isnan(other), logical.ge(input, other)), input, other)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise minimum, where a NaN loses to a number (NaN only where both are NaN)."""
    input, other = ensure_tensor("fmin", input), ensure_tensor("fmin", other)
    return selection.where(logical.logical_or(logical.isnan(other), logical.le(input, other)), input, other)


def _promoted_float(op: str, input: Any, other: Any) -> Tensor:
    """`input` as a tensor in the dtype PyTorch computes `op` in: the operands' promoted dtype, the
    default float where that is integral (copysign(int64, float64) is float64, not float32)."""
    input = ensure_tensor(op, input)
    dtype = result_type(input, other)
    if not dtype.is_floating_point:
        dtype = dtypes.get_default_dtype()
    return input.to(dtype)


def copysign(input: Any, other: Any) -> Tensor:
    """|input| with the sign of `other` (-0.0 counts as negative); the gradient flows to `input`."""
    magnitude = unary.abs(_promoted_float("copysign", input, other))
    if not isinstance(other, Tensor):
        return arithmetic.neg(magnitude) if math.copysign(1.0, other) < 0 else magnitude
    return selection.where(logical.signbit(other), arithmetic.neg(magnitude), magnitude)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 where `input` < 0, `values` where it is 0, 1 where > 0 (not differentiable, as in PyTorch)."""
    input, values = ensure_tensor("heaviside", input), ensure_tensor("heaviside", values)
    if input.dtype != values.dtype:
        raise TypeError(f"heaviside: input and values must have the same dtype, got {input.dtype} and {values.dtype}")
    with no_grad():
        step = logical.gt(input, 0).to(input.dtype)
        return selection.where(logical.eq(input, 0), values, step)


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """log2(2**input + 2**other), without overflow."""
    ln2 = math.log(2.0)
    scaled = RULES["logaddexp"](arithmetic.mul(_floating("logaddexp2", input), ln2), arithmetic.mul(_floating("logaddexp2", other), ln2))
    return arithmetic.div(scaled, ln2)


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """input * 2**other, in a floating dtype."""
    other = ensure_tensor("ldexp", other)
    if other.dtype is dtypes.bool_ and isinstance(input, Tensor) and input.is_floating_point():
        # PyTorch's kernel refuses it here (and takes it with an integer or bool input).
        raise NotImplementedError(f"ldexp: a bool exponent with a {input.dtype} input is not supported, as in PyTorch; convert it, e.g. other.long()")
    input = _promoted_float("ldexp", input, other)
    # 2 ** other in other's own float dtype, as PyTorch (ldexp(float32, float16) rounds it to float16).
    power = arithmetic.pow(2.0, other if other.is_floating_point() else other.to(input.dtype))
    return arithmetic.mul(input, power)


def sinc(input: Tensor) -> Tensor:
    """sin(pi x) / (pi x), 1 at 0 (the normalised sinc), with the gradient 0 there."""
    input = _floating("sinc", input)
    if input._data.dtype.itemsize == 2:
        # float16 and bfloat16 in float32, as PyTorch's kernel: pi * x rounded to half precision
        # turns sinc(0.9) into 0.1002 (float16, torch 0.10004) and sinc near 2 into 1e-3 (bfloat16).
        return sinc(input.float()).to(input.dtype)
    at_zero = logical.eq(input, 0)
    safe = arithmetic.mul(selection.where(at_zero, 1.0, input), math.pi)
    return selection.where(at_zero, 1.0, arithmetic.div(unary.sin(safe), safe))


def _matrix(op: str, name: str, value: Any, ndim: int) -> Tensor:
    value = ensure_tensor(op, value)
    if value.ndim != ndim:
        raise ValueError(f"{op}: {name} must be {ndim}-D, got shape {tuple(value.shape)}")
    return value


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The matrix-vector product of a 2-D `input` (dense, or sparse COO or CSR) and a 1-D `vec`."""
    if getattr(input, "is_sparse", False) or getattr(input, "is_sparse_csr", False):
        return linalg.matmul(input, _matrix("mv", "vec", vec, 1))  # the sparse kernels check the sizes
    input, vec = _matrix("mv", "input", input, 2), _matrix("mv", "vec", vec, 1)
    if input.shape[1] != vec.shape[0]:
        raise ValueError(f"mv: input {tuple(input.shape)} and vec {tuple(vec.shape)} cannot be multiplied")
    return linalg.matmul(input, vec)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two 1-D tensors (real tensors: conjugation is the identity)."""
    return products.dot(_matrix("vdot", "input", input, 1), _matrix("vdot", "other", other, 1))


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2)."""
    product = products.outer(_matrix("addr", "vec1", vec1, 1), _matrix("addr", "vec2", vec2, 1))
    return _scaled_sum(input, product, beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * the sum over the batch of batch1[i] @ batch2[i]."""
    product = reduction.sum(products.bmm(_matrix("addbmm", "batch1", batch1, 3), _matrix("addbmm", "batch2", batch2, 3)), 0)
    if isinstance(input, Tensor) and input.dtype is not product.dtype and casts_on(product) and input.is_floating_point():
        input = input.to(product.dtype)  # autocast lowers addbmm's input too, as PyTorch's does
    return _scaled_sum(input, product, beta, alpha)


def _scaled_sum(input: Tensor, product: Tensor, beta: Any, alpha: Any) -> Tensor:
    term = product if alpha == 1 else arithmetic.mul(product, alpha)
    if beta == 0:  # PyTorch ignores input then, NaNs included
        return arithmetic.add(term, arithmetic.mul(selection.where(logical.isnan(input), 0.0, input), 0))
    return arithmetic.add(input if beta == 1 else arithmetic.mul(input, beta), term)


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None, aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in the rows of `input` (observations in columns)."""
    input = ensure_tensor("cov", input)
    if input.ndim > 2:
        raise ValueError(f"cov: expected a tensor of at most 2 dimensions, got shape {tuple(input.shape)}")
    x = _floating("cov", input if input.ndim == 2 else shape.reshape(input, (1, -1)))
    observations = x.shape[1]
    weights = None
    for name, given in (("fweights", fweights), ("aweights", aweights)):
        if given is None:
            continue
        given = ensure_tensor("cov", given)
        if given.ndim != 1 or given.shape[0] != observations:
            raise ValueError(f"cov: {name} must be 1-D with {observations} entries, got shape {tuple(given.shape)}")
        if name == "fweights" and given.is_floating_point():
            raise TypeError("cov: fweights must be integers")
        if bool(logical.any(logical.lt(given, 0))):
            raise ValueError(f"cov: {name} cannot be negative")
        weights = given if weights is None else arithmetic.mul(weights, given)
    if weights is None:
        total = float(observations)
        mean = reduction.mean(x, 1, keepdim=True)
        norm = total - correction
        centred = arithmetic.sub(x, mean)
        result = arithmetic.div(linalg.matmul(centred, shape.transpose(centred, 0, 1)), max(norm, 0.0))
    else:
        weights = weights.to(x.dtype)
        total_w = reduction.sum(weights)
        mean = arithmetic.div(reduction.sum(arithmetic.mul(x, weights), 1, keepdim=True), total_w)
        if correction == 0:
            norm = total_w
        elif aweights is None:
            norm = arithmetic.sub(total_w, correction)
        else:
            norm = arithmetic.sub(total_w, arithmetic.div(arithmetic.mul(reduction.sum(arithmetic.mul(weights, aweights.to(x.dtype))), correction), total_w))
        centred = arithmetic.sub(x, mean)
        result = arithmetic.div(linalg.matmul(arithmetic.mul(centred, weights), shape.transpose(centred, 0, 1)), selection.clamp(norm, min=0.0))
    return shape.reshape(result, ()) if input.ndim < 2 else result


def corrcoef(input: Tensor) -> Tensor:
    """Pearson's correlation coefficients of the variables in the rows of `input`, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return arithmetic.div(c, c)
    d = unary.sqrt(diagonals.diagonal(c))
    r = arithmetic.div(arithmetic.div(c, shape.reshape(d, (-1, 1))), shape.reshape(d, (1, -1)))
    return selection.clamp(r, -1.0, 1.0)


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> aminmax_result:
    """(min, max) of `input`, over everything or along `dim`."""
    input = ensure_tensor("aminmax", input)
    if input.numel() == 0 and (dim is None or input.shape[dim] == 0):
        raise ValueError(f"aminmax: cannot reduce an empty tensor of shape {tuple(input.shape)} (no identity)")
    if dim is None:
        low, high = reduction.amin(input), reduction.amax(input)
        if keepdim:
            low, high = (shape.reshape(v, (1,) * input.ndim) for v in (low, high))
        return aminmax_result(low, high)
    return aminmax_result(reduction.amin(input, dim, keepdim), reduction.amax(input, dim, keepdim))
