"""Matrix products: matmul (PyTorch semantics: 1-D, 2-D and broadcast batches), mm, bmm, dot,
outer and linear.

One primitive, ``matmul`` on operands of at least two dimensions, carries the gradient; its
backward is two more matmuls (``grad @ b^T`` and ``a^T @ grad``), so second derivatives come for
free. linear (``x @ weight^T + bias``) is its own op, one GEMM with the bias added in place,
whose backward is matmuls and a sum. Everything else is composed: 1-D operands are unsqueezed
and squeezed back, outer is a broadcast product.

The forward hands BLAS transposed operands as flags instead of copying them (a ``weight.t()`` or
a ``.mT`` in a backward arrives as a Fortran-ordered view), and folds the batch of ``a`` into
rows when ``b`` has no batch, so ``linear`` on (N, T, in) is one GEMM.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numdiff._lazy import lazy_module
from numdiff.amp import casts_on
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import _state as _grad_state
from numdiff.autograd.transform_state import vmap_active
from numdiff.backend import backend_for, is_host
from numdiff.ops import reduction as _reduction
from numdiff.ops import shape as _shape
from numdiff.ops._product_grads import array_of, itself, linear_backward_arrays, matmul_grads, swap_last
from numdiff.ops._util import broadcast_shape, check_same_device, ensure_tensor
from numdiff.ops.registry import register
from numdiff.overrides import ForeignOperandError, dispatch_call, hands_over
from numdiff.tensor import Tensor

_matmul_kernels = lazy_module("numdiff.kernels.matmul")  # with Numba, loaded by the first product

__all__ = ["linear", "matmul"]


def _operand(x: Any) -> tuple[Any, bool]:
    """``(array, transposed)`` with ``array`` C-contiguous and ``x == array`` or
    ``x == array.swapaxes(-1, -2)``; copies only when neither layout fits."""
    if x.flags.c_contiguous:
        return x, False
    swapped = x.transpose(tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))
    if swapped.flags.c_contiguous:
        return swapped, True
    return np.ascontiguousarray(x, like=x), False


# The backend's GEMM launchers _product picks from (by operand layout and batching).
_GEMM = ("gemm_nn", "gemm_nt", "gemm_tn", "bgemm_nn", "bgemm_nt", "bgemm_tn")


def _product(a: Any, b: Any, out: Any) -> None:
    """out = a @ b for 2-D or equal-batch 3-D arrays, picking the kernel by operand layout.

    float16 has no kernel: it is computed in float32 and rounded once, as PyTorch's CPU build does."""
    if out.dtype == np.float16:
        wide = np.empty(out.shape, dtype=np.float32, like=out)
        _product(a.astype(np.float32), b.astype(np.float32), wide)
        out[...] = wide
        return
    kernels = backend_for(out)
    batched = out.ndim == 3
    (a_c, a_t), (b_c, b_t) = _operand(a), _operand(b)
    if a_t and b_t:  # no kernel takes both transposed: make b plain
        b_c, b_t = np.ascontiguousarray(b, like=b), False
    if a_t:
        (kernels.bgemm_tn if batched else kernels.gemm_tn)(a_c, b_c, out)
    elif b_t:
        (kernels.bgemm_nt if batched else kernels.gemm_nt)(a_c, b_c, out)
    else:
        (kernels.bgemm_nn if batched else kernels.gemm_nn)(a_c, b_c, out)


def _fresh_product(a: Any, b: Any, out: Any) -> None:
    """out = a @ b for 2-D arrays into an `out` just allocated by the caller: host operands of
    out's float dtype, each C-contiguous or the transpose of a C-contiguous array (the layouts of
    a create_graph backward's products: a gradient, a weight, a ``.mT`` view), go to
    run_product_checked with the layout as flags, after the one check that guards its memory
    accesses (a's columns against b's rows, out's shape); anything else takes _product and the
    checking kernels. The kernel and its result are _product's: same bits."""
    dtype = out.dtype
    if is_host(a) and is_host(b) and a.dtype == dtype == b.dtype and dtype in _FLOATS:
        (a_c, a_t), (b_c, b_t) = _operand(a), _operand(b)
        if not (a_t and b_t) and a.shape[1] == b.shape[0] and out.shape == (a.shape[0], b.shape[1]):
            _matmul_kernels.run_product_checked(a_t, b_t, a_c, b_c, out)
            return
    _product(a, b, out)


class _Unsaved:
    """The ctx of a forward run again on part of its input: saves nothing."""

    @staticmethod
    def save_for_backward(*items: Any) -> None:
        pass


def _copied_rows(a: Any) -> tuple | None:
    """An index taking once each leading dim of `a` (all but the last) that only repeats one row
    (stride 0, size > 1: vmap's copies of an input that a level is not batched over), or None.

    A product with a shared right operand then runs on the distinct rows and is broadcast back:
    less work, and the rounding of the product without the copies (one GEMM over 2112 copied
    rows sums differently from one over the 64 distinct ones, so vmap(jacrev(f)) drifted from
    jacrev of the summed f beyond allclose in float32).
    """
    if not is_host(a):
        return None
    copied = [d for d in range(a.ndim - 1) if a.strides[d] == 0 and a.shape[d] > 1]
    if not copied:
        return None
    return tuple(slice(0, 1) if d in copied else slice(None) for d in range(a.ndim - 1))


@register("matmul", compile="kernel", launchers=_GEMM)
class Matmul(Function):
    """``a @ b`` for operands of two or more dimensions, batch dimensions broadcast."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        if a.dtype.kind not in "fV":
            return np.matmul(a, b)  # integer products: no kernel, no gradient
        m, k = a.shape[-2:]
        n = b.shape[-1]
        batch = a.shape[:-2] if a.shape[:-2] == b.shape[:-2] else np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        out = np.empty(batch + (m, n), dtype=a.dtype, like=a)
        if out.size == 0:
            return out
        if a.ndim == b.ndim == 2:
            _fresh_product(a, b, out)
        elif b.ndim == 2 and 0 in a.strides[:-1] and _copied_rows(a) is not None:
            out[...] = Matmul.forward(_Unsaved, a[_copied_rows(a)], b)
        elif b.ndim == 2:
            # No batch on b: fold a's batch into rows, one GEMM. Sizes are explicit, not -1:
            # with k == 0 a reshape cannot infer them (the product is then zeros).
            rows = out.size // n
            a_rows = np.ascontiguousarray(a, like=a).reshape(rows, k)
            _product(a_rows, b, out.reshape(rows, n))
        elif k and not any(b.strides[:-2]):
            # b's batch is a broadcast of one matrix (an expand, as vmap makes of shared weights):
            # the same fold, without first copying that matrix once per batch entry. (An empty
            # inner dimension gives zero strides too, and takes the general path.)
            rows = out.size // n
            a_rows = np.ascontiguousarray(np.broadcast_to(a, batch + (m, k)), like=a).reshape(rows, k)
            _product(a_rows, b[(0,) * (b.ndim - 2)], out.reshape(rows, n))
        elif k and not any(a.strides[:-2]) and n * (k + m) < m * k:
            # a's batch is a broadcast of one matrix (a weight times a batch of vectors, as vmap
            # and jacrev make of w @ v): out[i]^T = b[i]^T a^T for all i is one GEMM of b's rows by
            # a^T, without copying a once per batch entry. Taken where b and out are smaller than
            # that copy; with n == 1 it writes out in place.
            count = out.size // (m * n)
            ndim = len(batch) + 2
            b_t = np.broadcast_to(b, batch + (k, n)).transpose(tuple(range(ndim - 2)) + (ndim - 1, ndim - 2))
            b_rows = np.ascontiguousarray(b_t, like=b).reshape(count * n, k)
            matrix_t = a[(0,) * (a.ndim - 2)].T
            if n == 1:
                _product(b_rows, matrix_t, out.reshape(count, m))
            else:
                rows = np.empty((count * n, m), dtype=out.dtype, like=out)
                _product(b_rows, matrix_t, rows)
                out[...] = rows.reshape(batch + (n, m)).transpose(tuple(range(ndim - 2)) + (ndim - 1, ndim - 2))
        else:
            count = out.size // (m * n)
            if a.shape[:-2] != batch:
                a = np.broadcast_to(a, batch + (m, k))
            if b.shape[:-2] != batch:
                b = np.broadcast_to(b, batch + (k, n))
            _product(a.reshape(count, m, k), b.reshape(count, k, n), out.reshape(count, m, n))
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        if (
            not _grad_state.enabled
            and is_host(grad._data)
            and grad._data.dtype in _FLOATS
            and a._data.dtype == grad._data.dtype == b._data.dtype
        ):
            grads = matmul_grads(a._data, b._data, grad._data, ctx.needs_input_grad, _array_times, swap_last, itself)
            return tuple(None if g is None else Tensor._wrap(g, None, None) for g in grads)
        return matmul_grads(a, b, grad, ctx.needs_input_grad, _times, _matrix_transpose, array_of)


def _array_times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return Matmul.forward(_Unsaved, a, b)


def _matrix_transpose(t: Tensor) -> Tensor:
    return _shape.transposed_matrix(t)


def _times(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` inside Matmul's backward: operands of two or more dimensions whose shapes the
    forward checked, so the op directly, without matmul()'s checks on every product of a
    create_graph backward; matmul() where the dtypes differ, for its error."""
    return Matmul.apply(a, b) if a._data.dtype == b._data.dtype else matmul(a, b)


def _check_pair(op: str, a: Any, b: Any) -> tuple[Tensor, Tensor]:
    a = ensure_tensor(op, a, "input")
    b = ensure_tensor(op, b, "other")
    check_same_device(op, a, b)
    # Read off the arrays: numdiff's dtypes and Sizes are made per access, twice per product here.
    if a._data.dtype != b._data.dtype and not (op != "dot" and casts_on(a)):
        raise TypeError(
            f"{op}: expected both operands to have the same dtype, got {a.dtype} and {b.dtype}; "
            "convert one with .to(dtype)"
        )
    if not a._data.shape or not b._data.shape:
        raise ValueError(
            f"{op}: both arguments need at least 1 dimension, got shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )
    return a, b


def _sparse(operand: Any) -> bool:
    """Whether `operand` is a numdiff.sparse tensor (COO or CSR), whose own products run."""
    return getattr(operand, "is_sparse", False) is True or getattr(operand, "is_sparse_csr", False) is True


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with PyTorch's rules: 1-D x 1-D is a dot product, a 1-D operand gets a
    dimension prepended (left) or appended (right) that is removed afterwards, and dimensions
    before the last two are broadcast batch dimensions.

    >>> a = numdiff.ones(2, 3, 4); b = numdiff.ones(4, 5)
    >>> numdiff.matmul(a, b).shape
    numdiff.Size([2, 3, 5])
    """
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)) and (_sparse(input) or _sparse(other)):
        return input.__matmul__(other) if _sparse(input) else other.__rmatmul__(input)
    a, b = _check_pair("matmul", input, other)
    shape_a, shape_b = a._data.shape, b._data.shape
    k_a = shape_a[-1]
    k_b = shape_b[0] if len(shape_b) == 1 else shape_b[-2]
    if k_a != k_b:
        raise ValueError(
            f"matmul: size mismatch, input {shape_a} has {k_a} columns but other "
            f"{shape_b} has {k_b} rows"
        )
    if len(shape_a) > 2 and len(shape_b) > 2:
        broadcast_shape("matmul (batch dimensions)", shape_a[:-2], shape_b[:-2])
    squeeze_left, squeeze_right = len(shape_a) == 1, len(shape_b) == 1
    if squeeze_left:
        a = a.reshape(1, k_a)
    if squeeze_right:
        b = b.reshape(k_b, 1)
    out = Matmul.apply(a, b)
    if squeeze_left or squeeze_right:
        shape = tuple(out.shape)
        out = out.reshape(shape[:-2] + shape[-2:-1] * (not squeeze_left) + shape[-1:] * (not squeeze_right))
    return out


@hands_over
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``: input (..., in_features), weight (out_features, in_features),
    bias (out_features,) or None.

    >>> numdiff.nn.functional.linear(numdiff.ones(4, 3), numdiff.ones(2, 3)).shape
    numdiff.Size([4, 2])
    """
    try:
        x = ensure_tensor("linear", input, "input")
        w = ensure_tensor("linear", weight, "weight")
        # Shapes and dtypes are read off the arrays: a layer runs these checks on every call.
        x_shape, w_shape, dtype = x._data.shape, w._data.shape, x._data.dtype
        mixed = dtype != w._data.dtype
        if mixed and not casts_on(x):
            raise TypeError(f"linear: input is {x.dtype} but weight is {w.dtype}; convert one with .to(dtype)")
        if len(w_shape) not in (1, 2):
            raise ValueError(f"linear: weight must be 1-D or 2-D (out_features, in_features), got shape {w_shape}")
        if not x_shape or x_shape[-1] != w_shape[-1]:
            raise ValueError(f"linear: input {x_shape} must end with in_features={w_shape[-1]} (weight {w_shape})")
        if bias is not None:
            bias = ensure_tensor("linear", bias, "bias")
            out_features = w_shape[0] if len(w_shape) == 2 else 1
            bias_shape = bias._data.shape
            if len(bias_shape) > 1 or (len(bias_shape) == 1 and bias_shape[0] != out_features):
                raise ValueError(f"linear: bias must have shape ({out_features},), got {bias_shape}")
            check_same_device("linear", x, w, bias)
        # Under vmap the composed form runs: matmul and add have batching rules (per-example weights too).
        if (
            len(w_shape) == 2
            and dtype.kind in "fV"  # floating (V: bfloat16's storage), without making a numdiff dtype
            and (mixed or bias is None or bias._data.dtype == dtype)  # mixed: autocast casts all three
            and not vmap_active()
        ):
            return Linear.apply(x, w, bias)
        out = matmul(x, w.mT if w.ndim == 2 else w)  # a 1-D weight, or integer operands
        return out if bias is None else out + bias
    except ForeignOperandError:  # a Proxy among the operands (numdiff.overrides)
        return dispatch_call(linear, locals())


@register("linear", compile="kernel", launchers=_GEMM)
class Linear(Function):
    """``x @ weight.T + bias`` as one op: one GEMM over all of x's rows (its batch dimensions
    folded in) with the bias added in place on the product. x (..., in), weight (out, in),
    bias (out,) or None."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        out_features = weight.shape[0]
        if (
            x.ndim == 2
            and weight.ndim == 2
            and out_features > 1
            and weight.shape[1] > 1
            and x.flags.c_contiguous
            and weight.flags.c_contiguous
            and x.dtype != np.float16
        ):
            # A layer's usual call, rows by weight (both C-contiguous, the weight's transpose not):
            # the gemm_nt that _product would pick, without its layout tests and the reshapes
            # (0.9 of Linear.forward's 6.7 us on 1x185 rows). A C-contiguous x has no stride-0 row copies.
            out = np.empty((x.shape[0], out_features), dtype=x.dtype, like=x)
            if out.size:
                if (
                    is_host(x)
                    and is_host(weight)
                    and x.dtype in _FLOATS
                    and weight.dtype == x.dtype
                    and weight.shape[1] == x.shape[1]
                ):
                    # Everything gemm_nt checks is known here, and out is new: its checks would
                    # be half of the product's cost on a batch-1 row (kernels.matmul.run_product_checked).
                    _matmul_kernels.run_product_checked(False, True, x, weight, out)
                else:
                    backend_for(out).gemm_nt(x, weight, out)
                if bias is not None:
                    np.add(out, bias, out=out)
            return out
        out = np.empty(x.shape[:-1] + (out_features,), dtype=x.dtype, like=x)
        if out.size == 0:
            return out
        # Row count explicit, not -1: with in_features == 0 a reshape cannot infer it (the
        # product is then zeros, which the kernels give for an empty inner dimension).
        copied = _copied_rows(x) if 0 in x.strides[:-1] else None  # the test first: no call per layer
        if copied is not None:
            out[...] = Linear.forward(_Unsaved, x[copied], weight, bias)
            return out
        n_rows = out.size // out_features
        rows = np.ascontiguousarray(x, like=x).reshape(n_rows, x.shape[-1])
        _product(rows, weight.T, out.reshape(n_rows, out_features))
        if bias is not None:
            np.add(out, bias, out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        # Matmul.apply directly: the shapes are the forward's, so matmul()'s checks and 1-D
        # handling would only add per-call overhead (a third of a small MLP's backward).
        x, weight = ctx.saved_tensors
        n_rows = math.prod(x._data.shape[:-1])  # explicit: -1 cannot be inferred from an empty dimension
        if (
            not _grad_state.enabled
            and is_host(grad._data)
            and grad._data.dtype in _FLOATS
            and x._data.dtype == grad._data.dtype == weight._data.dtype
        ):
            return linear_backward_arrays(x._data, weight._data, grad._data, n_rows, ctx.needs_input_grad, _product)
        # Recorded (create_graph): the transpose and the bias sum as their ops directly, without
        # transpose()'s and sum()'s argument checks: (1, 0) is a permutation and dim 0 exists.
        grad_x = grad_weight = grad_bias = None
        grad_rows = grad if grad.ndim == 2 else grad.reshape(n_rows, weight.shape[0])
        if ctx.needs_input_grad[0]:
            grad_x = Matmul.apply(grad_rows, weight)
            if grad.ndim != 2:
                grad_x = grad_x.reshape(tuple(x.shape))
        if ctx.needs_input_grad[1]:
            rows = x if x.ndim == 2 else x.reshape(n_rows, weight.shape[1])
            grad_weight = Matmul.apply(_shape.transposed_matrix(grad_rows), rows)
        if ctx.needs_input_grad[2]:
            grad_bias = _reduction.Sum.apply(grad_rows, dims=(0,), keepdim=False)
        return grad_x, grad_weight, grad_bias


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
