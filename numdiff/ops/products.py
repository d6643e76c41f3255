"""Products composed of matmul and the elementwise ops: mm, bmm, dot and outer (matmul with their
shape rules), tensordot, inner, cross, and the fused multiply-adds addmm, baddbmm, addcmul,
addcdiv. Their gradients come from the ops they are made of.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numdiff.amp import autocast, casts_on
from numdiff.ops._util import broadcast_shape, ensure_tensor, normalize_dim
from numdiff.ops.arithmetic import add, div, mul
from numdiff.ops.joining import stack
from numdiff.ops.linalg import _check_pair, _sparse, linear, matmul
from numdiff.tensor import Tensor


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two matrices, (n, m) @ (m, p) -> (n, p); no broadcasting.

    >>> numdiff.mm(numdiff.ones(2, 3), numdiff.ones(3, 4)).shape
    numdiff.Size([2, 4])
    """
    if not (isinstance(input, Tensor) and isinstance(mat2, Tensor)) and (_sparse(input) or _sparse(mat2)):
        return matmul(input, mat2)  # the COO and CSR kernels (numdiff.sparse)
    a, b = _check_pair("mm", input, mat2)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(
            f"mm: both arguments must be 2-D matrices, got shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )
    return matmul(a, b)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched product of 3-D tensors with equal batch sizes, (b, n, m) @ (b, m, p) -> (b, n, p).

    >>> numdiff.bmm(numdiff.ones(5, 2, 3), numdiff.ones(5, 3, 4)).shape
    numdiff.Size([5, 2, 4])
    """
    a, b = _check_pair("bmm", input, mat2)
    if a.ndim != 3 or b.ndim != 3:
        raise ValueError(f"bmm: both arguments must be 3-D, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"bmm: batch sizes differ, input {tuple(a.shape)} and mat2 {tuple(b.shape)}")
    return matmul(a, b)


def dot(input: Tensor, other: Tensor) -> Tensor:
    """Inner product of two 1-D tensors of equal length, a 0-d tensor.

    >>> numdiff.dot(numdiff.tensor([1.0, 2.0]), numdiff.tensor([3.0, 4.0]))
    tensor(11.)
    """
    a, b = _check_pair("dot", input, other)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"dot: both arguments must be 1-D, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"dot: lengths differ, {a.shape[0]} and {b.shape[0]}")
    return matmul(a, b)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two 1-D tensors: ``out[i, j] = input[i] * vec2[j]``.

    >>> numdiff.outer(numdiff.tensor([1.0, 2.0]), numdiff.tensor([3.0, 4.0, 5.0])).shape
    numdiff.Size([2, 3])
    """
    a = ensure_tensor("outer", input, "input")
    b = ensure_tensor("outer", vec2, "vec2")  # mixed dtypes promote (the product does), as in PyTorch
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(
            f"outer: both arguments must be 1-D, got shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )
    return a.reshape(-1, 1) * b.reshape(1, -1)


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Sum of products over dims of `a` and `b`: dims=n pairs a's last n with b's first n dims;
    dims=([a dims], [b dims]) pairs them as listed. The free dims of a, then of b, remain.

    >>> numdiff.tensordot(numdiff.ones(2, 3, 4), numdiff.ones(3, 4, 5)).shape
    numdiff.Size([2, 5])
    """
    a = ensure_tensor("tensordot", a, "a")
    b = ensure_tensor("tensordot", b, "b")
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)):
        n = int(dims)
        if n < 0 or n > a.ndim or n > b.ndim:
            raise ValueError(f"tensordot: dims={n} must be in [0, min({a.ndim}, {b.ndim})] for shapes {tuple(a.shape)} and {tuple(b.shape)}")
        dims_a, dims_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        if len(dims) != 2:
            raise ValueError(f"tensordot: dims must be an int or a pair of dim lists, got {dims!r}")
        dims_a, dims_b = ([d] if isinstance(d, (int, np.integer)) else list(d) for d in dims)
        if len(dims_a) != len(dims_b):
            raise ValueError(f"tensordot: the dim lists {dims_a} and {dims_b} must have the same length")
        dims_a = [normalize_dim("tensordot", d, a.ndim) for d in dims_a]
        dims_b = [normalize_dim("tensordot", d, b.ndim) for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise ValueError(
                f"tensordot: contracted dimension {da} of a (shape {tuple(a.shape)}) has size {a.shape[da]} "
                f"but dimension {db} of b (shape {tuple(b.shape)}) has size {b.shape[db]}"
            )
    if len(set(dims_a)) != len(dims_a) or len(set(dims_b)) != len(dims_b):
        raise ValueError(f"tensordot: a dim is contracted twice in {dims_a}, {dims_b}")
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    shape_a = [a.shape[d] for d in free_a]
    shape_b = [b.shape[d] for d in free_b]
    inner = math.prod(a.shape[d] for d in dims_a)
    left = a.permute(free_a + dims_a).reshape(math.prod(shape_a), inner)
    right = b.permute(dims_b + free_b).reshape(inner, math.prod(shape_b))
    return matmul(left, right).reshape(shape_a + shape_b)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum of products over the last dim of both (a product when either is 0-d).

    >>> numdiff.inner(numdiff.tensor([1.0, 2.0]), numdiff.tensor([3.0, 4.0]))
    tensor(11.)
    """
    input = ensure_tensor("inner", input)
    other = ensure_tensor("inner", other, "other")
    if input.ndim == 0 or other.ndim == 0:
        return mul(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise ValueError(
            f"inner: the last dims must match, got shapes {tuple(input.shape)} and {tuple(other.shape)}"
        )
    return tensordot(input, other, ([input.ndim - 1], [other.ndim - 1]))


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """Cross product of 3-vectors along `dim` (the inputs broadcast); with dim None, the first
    dim of `input` of size 3, as torch.cross does.

    >>> numdiff.cross(numdiff.tensor([1.0, 0.0, 0.0]), numdiff.tensor([0.0, 1.0, 0.0]), dim=0)
    tensor([0., 0., 1.])
    """
    input = ensure_tensor("cross", input)
    other = ensure_tensor("cross", other, "other")
    if input.ndim != other.ndim:
        raise ValueError(f"cross: inputs must have the same number of dimensions, got shapes {tuple(input.shape)} and {tuple(other.shape)}")
    if dim is None:
        sized = [d for d, n in enumerate(input.shape) if n == 3]
        if not sized:
            raise ValueError(f"cross: no dimension of size 3 in input of shape {tuple(input.shape)}")
        dim = sized[0]
    dim = normalize_dim("cross", dim, input.ndim)
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise ValueError(
            f"cross: dimension {dim} must have length 3 in both inputs, got shapes {tuple(input.shape)} and {tuple(other.shape)}"
        )
    shape = broadcast_shape("cross", tuple(input.shape), tuple(other.shape))
    a = input.expand(shape).unbind(dim)
    b = other.expand(shape).unbind(dim)
    return stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]], dim)


def _scaled_sum(op: str, input: Tensor, product: Tensor, beta: Any, alpha: Any) -> Tensor:
    """beta * input + alpha * product; beta = 0 ignores input (its NaN and inf too), as PyTorch."""
    input = ensure_tensor(op, input)
    if input.dtype is not product.dtype and op != "addmv" and casts_on(product) and input.is_floating_point():
        # Autocast lowers all of addmm's and baddbmm's operands, input too, as PyTorch's does.
        input = input.to(product.dtype)
    if input.dtype is not product.dtype:
        raise TypeError(f"{op}: input is {input.dtype} but the product is {product.dtype}; convert with .to(dtype)")
    broadcast_shape(op, tuple(input.shape), tuple(product.shape))
    if tuple(np.broadcast_shapes(tuple(input.shape), tuple(product.shape))) != tuple(product.shape):
        raise ValueError(f"{op}: input of shape {tuple(input.shape)} does not broadcast to the product's shape {tuple(product.shape)}")
    scaled = product if alpha == 1 else mul(product, alpha)
    if beta == 0:
        return scaled
    return add(input if beta == 1 else mul(input, beta), scaled)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2), input broadcast to the product's (n, p).

    >>> numdiff.addmm(numdiff.zeros(2), numdiff.ones(2, 3), numdiff.ones(3, 2)).shape
    numdiff.Size([2, 2])
    """
    if (
        beta == 1
        and alpha == 1
        and isinstance(input, Tensor)
        and input.ndim == 1
        and isinstance(mat1, Tensor)
        and isinstance(mat2, Tensor)
        and mat1.ndim == mat2.ndim == 2
        and mat1.shape[1] == mat2.shape[0]
        and input.shape[0] == mat2.shape[1]
        and input.dtype is mat1.dtype is mat2.dtype
        and input._data.dtype.kind == "f"
    ):
        # addmm(bias, x, w) is how older PyTorch code writes a linear layer: one GEMM with the
        # bias added in place (numdiff's linear op), w read transposed without a copy.
        return linear(mat1, mat2.mT, input)
    return _scaled_sum("addmm", input, mm(mat1, mat2), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * bmm(batch1, batch2), input broadcast to the product's (b, n, p)."""
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (mat @ vec) for a matrix and a vector."""
    mat = ensure_tensor("addmv", mat, "mat")
    vec = ensure_tensor("addmv", vec, "vec")
    if mat.ndim != 2 or vec.ndim != 1:
        raise ValueError(f"addmv: expects a 2-D mat and a 1-D vec, got shapes {tuple(mat.shape)} and {tuple(vec.shape)}")
    if casts_on(mat):
        # Not on PyTorch's autocast lists: addmv runs in its operands' dtype, so its product does too.
        with autocast(mat.device.type, enabled=False):
            return _scaled_sum("addmv", input, matmul(mat, vec), beta, alpha)
    return _scaled_sum("addmv", input, matmul(mat, vec), beta, alpha)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """input + value * tensor1 * tensor2, all three broadcast.

    >>> numdiff.addcmul(numdiff.ones(2), numdiff.tensor([2.0, 3.0]), numdiff.tensor([4.0, 5.0]), value=0.5)
    tensor([5.0000, 8.5000])
    """
    _check_three("addcmul", input, tensor1, tensor2)
    product = mul(tensor1, tensor2)
    return add(input, product if value == 1 else mul(product, value))


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """input + value * tensor1 / tensor2, all three broadcast; integer tensor1 and tensor2 are refused.

    >>> numdiff.addcdiv(numdiff.ones(2), numdiff.tensor([2.0, 3.0]), numdiff.tensor([4.0, 6.0]))
    tensor([1.5000, 1.5000])
    """
    _check_three("addcdiv", input, tensor1, tensor2)
    if tensor1._data.dtype.kind in "biu" and tensor2._data.dtype.kind in "biu":
        raise TypeError(
            f"addcdiv: integer division is not supported (tensor1 {tensor1.dtype}, tensor2 {tensor2.dtype}); "
            "use input + value * tensor1 / tensor2, or convert them to floating point first"
        )
    quotient = div(tensor1, tensor2)
    return add(input, quotient if value == 1 else mul(quotient, value))


def _check_three(op: str, input: Any, tensor1: Any, tensor2: Any) -> None:
    tensors = (ensure_tensor(op, input), ensure_tensor(op, tensor1, "tensor1"), ensure_tensor(op, tensor2, "tensor2"))
    broadcast_shape(op, *(tuple(t.shape) for t in tensors))
