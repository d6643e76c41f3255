"""The engine's gradient buffers: when one may be written in place, and ops that write into one.

Where several nodes feed one input (a residual connection, a tensor used twice), the engine adds
each further gradient into the buffer it holds (:func:`add_in_place`) when nothing else refers to
that buffer or its memory, instead of allocating an array for every sum.

An op whose backward only scatters its gradient into a region of its input's gradient (getitem,
and so split, chunk, unbind and narrow) defines ``backward_into(ctx, grad, buffer)``: it adds
`grad` into `buffer` (an array of the input's shape) where forward read the input, allocating
the buffer when it is None. The engine then keeps one gradient array per input that every piece
writes into, instead of each piece's backward writing a zero array of the whole input and the
engine adding those up (a (16, 64, 384) float32 split in three: three zero arrays and two full
sums, about 2.7x PyTorch's backward, which writes one buffer).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff.backend import is_host

__all__ = ["accumulate_sparse", "add_in_place", "backward_into_buffer", "is_sparse_gradient", "sum_gradients", "unshared"]


def _summable(data: Any) -> bool:
    """A host array NumPy adds natively: floats and complex (bfloat16's storage is a void dtype
    NumPy cannot add, and those gradients take the plain path)."""
    return is_host(data) and data.dtype.kind in "fc"


def unshared(grad: Any, tensor_refs: int) -> bool:
    """True if nothing but the engine holds `grad` or its memory, so it may be written in place
    (or `.grad` may take it over).

    `tensor_refs` is what sys.getrefcount(grad) returned in the caller's frame: 2 means only the
    caller's local variable (and getrefcount's own argument) refer to the tensor. The array must be
    writable (not a broadcast view) and referred to only by this tensor; if it is a view (kernels
    often return a reshaped buffer), each array it views must be held only by that view and be no
    larger than it. Anything a user or the graph holds shows up in these counts, so the check errs
    on the side of copying.
    """
    data = grad._data
    if tensor_refs != 2 or not is_host(data) or not data.flags.writeable:
        return False
    # Three references: grad._data, the local `data`, and getrefcount's argument.
    if sys.getrefcount(data) != 3:
        return False
    base = data.base
    while base is not None:
        # Likewise: the viewing array's .base, the local `base`, and the argument.
        if not is_host(base) or base.nbytes != data.nbytes or sys.getrefcount(base) != 3:
            return False
        base = base.base
    return True


def backward_into_buffer(node: Any, grad: Any, buffers: dict, wrap: Callable) -> bool:
    """Run `node`'s ``backward_into`` on `grad` into the buffer `buffers` keeps for its one input;
    False (nothing done) where the plain backward must run: a device array, or a buffer of
    another dtype. A buffer someone else also holds is copied first, never written."""
    (next_node,) = node.next_nodes
    if next_node is None:
        return True
    data = grad._data
    if not _summable(data):
        return False
    pending = buffers.pop(next_node, None)
    if pending is None:
        buffer = None
    elif pending._data.dtype != data.dtype or pending._data.shape != node.input_shapes[0]:
        buffers[next_node] = pending
        return False
    else:
        refs = sys.getrefcount(pending)  # its own statement: a call's arguments count too
        buffer = pending._data if unshared(pending, refs) else pending._data.copy()
    pending = None
    buffers[next_node] = wrap(node.function.backward_into(node, data, buffer), None, None)
    return True


def add_in_place(pending: Any, grad: Any) -> bool:
    """``pending += grad`` on the array of a gradient buffer the engine alone holds (the caller
    popped it from its buffers and holds it in one local), rather than a new array for the sum;
    False (nothing done) when anyone else holds it or the sum would change its dtype."""
    if pending._data.dtype != grad._data.dtype or not _summable(grad._data):
        return False
    # The caller's local, this parameter and getrefcount's argument; unshared counts as if called
    # from the caller's frame.
    if sys.getrefcount(pending) != 3 or not unshared(pending, 2):
        return False
    np.add(pending._data, grad._data, out=pending._data)
    return True


def is_sparse_gradient(grad: Any) -> bool:
    """True for a sparse COO gradient (an embedding's with sparse=True), which the engine sums
    with :func:`sum_gradients` instead of as an array. Dense Tensors answer from their type."""
    return getattr(grad, "is_sparse", False) is True and not hasattr(grad, "_data")


def sum_gradients(old: Any, new: Any) -> Any:
    """``old + new`` for two gradients of one tensor where either is sparse, as PyTorch sums them:
    sparse + sparse stays sparse and uncoalesced (both index lists, both value lists), dense +
    sparse and sparse + dense give dense."""
    if is_sparse_gradient(old):
        return old._concatenated(new) if is_sparse_gradient(new) else new + old.to_dense().to(new.dtype)
    return old + new.to_dense().to(old.dtype)


def accumulate_sparse(tensor: Any, grad: Any) -> None:
    """``tensor.grad += grad`` where `grad` or the `.grad` already there is sparse. A dense `.grad`
    on the host takes a sparse gradient's rows in place (PyTorch's dense ``+=`` sparse); any other
    pair is summed by :func:`sum_gradients` into a new `.grad`."""
    old = tensor._grad
    if old is None:
        tensor._grad = grad
        return
    sparse_into_dense = is_sparse_gradient(grad) and not is_sparse_gradient(old)
    if sparse_into_dense and is_host(old._data) and old._data.flags.c_contiguous and not old._requires_grad:
        coalesced = grad.coalesce()
        rows = coalesced._index_tensor.cpu().numpy()
        target = old._data.reshape((-1,) + tuple(old.shape[coalesced.sparse_dim():]))
        linear = np.ravel_multi_index(tuple(rows), tuple(old.shape[: coalesced.sparse_dim()]))
        target[linear] += coalesced._value_tensor._data.astype(target.dtype, copy=False)
        old._version_counter[0] += 1
        return
    tensor._grad = sum_gradients(old, grad)
