"""The gradients of the matrix products, written once over tensors and arrays: Matmul's two
gradients (recorded on tensors, or on host arrays when nothing is recorded) and Linear's
first-order backward on host arrays. The products themselves are passed in by numdiff.ops.linalg,
which owns the ops and their GEMM launchers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numdiff._lazy import lazy_module
from numdiff.backend import is_host
from numdiff.tensor import Tensor

_matmul_kernels = lazy_module("numdiff.kernels.matmul")  # with Numba, loaded by the first product


def matmul_grads(a: Any, b: Any, grad: Any, needs: tuple, times: Any, swap: Any, array_of: Any) -> tuple:
    """Matmul's two gradients, written once for both forms of its backward: on tensors, recorded
    (`times` the op, `swap` ``.mT``), and on host arrays when nothing is recorded (`times` the
    forward's product, `swap` a swapaxes view; for small batched products the op calls and
    transposes of the recorded form cost several times the arithmetic). `array_of` gives an
    operand's array, whose layout picks the product.

    A matrix stored transposed (weight.t() in linear) gets its gradient computed in that same
    layout, (g^T a)^T instead of a^T g: the transpose back to it is then free and the leaf's
    gradient is a contiguous copy rather than a strided one. grad_a keeps the broadcast batch
    dimensions; the engine sums them back to a's shape."""
    grad_a = grad_b = None
    if needs[0]:
        if a.ndim == 2 and b.ndim == 2 and transposed_layout(array_of(a)):
            grad_a = swap(times(b, swap(grad)))
        else:
            grad_a = times(grad, swap(b))
    if needs[1]:
        if b.ndim == 2:
            k, n = b.shape
            count = math.prod(a.shape[:-1])  # explicit: -1 cannot be inferred when k == 0
            rows, grad_rows = a.reshape(count, k), grad.reshape(count, n)
            if transposed_layout(array_of(b)):
                grad_b = swap(times(swap(grad_rows), rows))
            else:
                grad_b = times(swap(rows), grad_rows)
        else:
            grad_b = times(swap(a), grad)
    return grad_a, grad_b


def transposed_layout(data: Any) -> bool:
    """True for a 2-D array whose transpose is C-contiguous but which itself is not."""
    return not data.flags.c_contiguous and data.T.flags.c_contiguous


def swap_last(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def itself(x: np.ndarray) -> np.ndarray:
    return x


def array_of(t: Tensor) -> Any:
    return t._data


def linear_backward_arrays(
    x: np.ndarray, weight: np.ndarray, grad: np.ndarray, n_rows: int, needs: tuple, product: Any
) -> tuple:
    """Linear's first-order backward on CPU arrays: the tensor form's products and sum, called
    directly (`product(a, b, out)` is the forward's product, for operands in other layouts). Without create_graph nothing is recorded, and for a small layer the three op calls
    (and the transposes that feed them) cost several times the arithmetic."""
    out_features, in_features = weight.shape
    grad_rows = grad.reshape(n_rows, out_features)
    grad_x = grad_weight = grad_bias = None
    x_rows = x.reshape(n_rows, in_features)
    # The caller checked the dtypes (float32 or float64, all one), the shapes are the forward's and
    # the outputs are new: with C-contiguous host operands the kernels' argument checks (and
    # _product's layout tests) would be repeated work.
    direct = (
        grad_rows.flags.c_contiguous  # tested one by one: a generator costs a call per layer
        and weight.flags.c_contiguous
        and x_rows.flags.c_contiguous
        and is_host(weight)
        and is_host(x)
    )
    if direct and needs[0] and needs[1]:
        # Both products in one call: side by side on the threads (numdiff.kernels.matmul).
        grad_x = np.empty((n_rows, in_features), dtype=grad.dtype)
        grad_weight = np.empty((out_features, in_features), dtype=grad.dtype)
        _matmul_kernels.run_linear_backward_checked(grad_rows, weight, x_rows, grad_x, grad_weight)
        grad_x = Tensor._wrap(grad_x.reshape(x.shape), None, None)
        grad_weight = Tensor._wrap(grad_weight, None, None)
        needs = (False, False, needs[2])
    if needs[0]:
        grad_x = np.empty((n_rows, in_features), dtype=grad.dtype)
        if direct:
            _matmul_kernels.run_product_checked(False, False, grad_rows, weight, grad_x)
        else:
            product(grad_rows, weight, grad_x)
        grad_x = Tensor._wrap(grad_x.reshape(x.shape), None, None)
    if needs[1]:
        # A first layer's weight gradient (its input needs none): grad_rows.T @ x_rows, the gemm_tn
        # that _product picks for a transposed C-contiguous operand.
        grad_weight = np.empty((out_features, in_features), dtype=grad.dtype)
        if direct:
            _matmul_kernels.run_product_checked(True, False, grad_rows, x_rows, grad_weight)
        else:
            product(grad_rows.T, x_rows, grad_weight)
        grad_weight = Tensor._wrap(grad_weight, None, None)
    if needs[2]:
        grad_bias = Tensor._wrap(grad_rows.sum(0), None, None)
    return grad_x, grad_weight, grad_bias
