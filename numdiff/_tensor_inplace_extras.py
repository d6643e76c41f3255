"""In-place Tensor methods that PyTorch programs use and numdiff's in-place machinery (same shape
in, same shape out) does not cover: the shape-changing ``t_``, ``transpose_``, ``swapdims_``,
``squeeze_``, ``unsqueeze_``, and ``index_put``/``index_put_`` with PyTorch's (indices, values,
accumulate) signature.

A shape-changing in-place op makes the tensor the result of the out-of-place op, in place: the
same object now holds the transposed (or squeezed) view of the same memory, and, when autograd
records, the out-of-place op's node, so gradients flow as in PyTorch. A leaf that requires grad
is refused while recording, as for every in-place op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff import _inplace
from numdiff.autograd.grad_mode import is_grad_enabled
from numdiff.creation import tensor as make_tensor
from numdiff.ops.indexing import index_put as put_at_key
from numdiff.ops.scatter import index_add
from numdiff.tensor import InPlaceOnLeafError, Tensor


def _reshaping_inplace(op: str, compute: Callable[[Tensor], Tensor]) -> Callable[..., Tensor]:
    def method(self: Tensor, *args: Any) -> Tensor:
        recording = is_grad_enabled() and self.requires_grad
        if recording and self.is_leaf:
            raise InPlaceOnLeafError(
                f"{op}: a leaf tensor of shape {tuple(self.shape)} that requires grad is being used in an in-place "
                "operation. Use the out-of-place op, or do it inside `with numdiff.no_grad():`."
            )
        out = compute(self, *args)
        self._data = out._data
        if recording:
            self._grad_fn = out._grad_fn
        if self._base is not None and out._base is self._base:
            # Still a view of the same base, now made by one more view op: a later in-place op
            # through it, or on the base, replays the view ops including this one.
            self._view_replay, self._base_node = out._view_replay, out._base_node
        self._version_counter[0] += 1
        return self

    method.__name__ = op
    method.__doc__ = f"In-place {op[:-1]}: this tensor becomes ``{op[:-1]}(...)`` of itself (same memory)."
    return method


def _key(self: Tensor, indices: Any) -> tuple[Any, ...]:
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put: indices must be a tuple of tensors, got {type(indices).__name__}")
    if len(indices) > self.ndim:
        raise IndexError(f"index_put: {len(indices)} index tensors for a tensor of {self.ndim} dims")
    return tuple(indices)


def index_put(self: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """A copy of this tensor with ``values`` written at ``indices`` (a tuple of index tensors, one
    per leading dim), or added there with ``accumulate=True`` (repeated indices add up).

    >>> numdiff.zeros(3).index_put((numdiff.tensor([0, 0]),), numdiff.tensor(1.0), accumulate=True)
    tensor([2., 0., 0.])
    """
    key = _key(self, indices)
    if not accumulate:
        return put_at_key(self, key, values)
    arrays = [k.detach().cpu().numpy() if isinstance(k, Tensor) else np.asarray(k) for k in key]
    if any(a.dtype == np.bool_ for a in arrays):
        raise TypeError("index_put: accumulate=True takes integer index tensors; turn a mask into them with nonzero()")
    lead = self.shape[: len(arrays)]
    broadcast = np.broadcast_arrays(*arrays)
    for d, (a, n) in enumerate(zip(broadcast, lead)):
        if a.size and (a.min() < -n or a.max() >= n):
            raise IndexError(f"index_put: index {a.min() if a.min() < -n else a.max()} is out of bounds for dim {d} "
                             f"of size {n}")
    linear = np.ravel_multi_index(tuple(np.where(a < 0, a + n, a) for a, n in zip(broadcast, lead)), tuple(lead))
    rest = tuple(self.shape[len(arrays):])
    if not isinstance(values, Tensor):
        values = make_tensor(values, dtype=self.dtype, device=self.device)
    source = values.to(self.dtype).broadcast_to(linear.shape + rest).reshape((-1, *rest))
    flat = self.reshape((-1, *rest))
    index = make_tensor(linear.reshape(-1).astype(np.int64), device=self.device)
    return index_add(flat, 0, index, source).reshape(tuple(self.shape))


def index_put_(self: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """In-place `index_put`."""
    return _inplace.apply_inplace(self, "index_put_", lambda old: index_put(old, indices, values, accumulate))


INPLACE_EXTRA_METHODS = {
    "t_": _reshaping_inplace("t_", lambda t: t.t()),
    "transpose_": _reshaping_inplace("transpose_", lambda t, a, b: t.transpose(a, b)),
    "swapdims_": _reshaping_inplace("swapdims_", lambda t, a, b: t.transpose(a, b)),
    "swapaxes_": _reshaping_inplace("swapaxes_", lambda t, a, b: t.transpose(a, b)),
    "squeeze_": _reshaping_inplace("squeeze_", lambda t, *dim: t.squeeze(*dim)),
    "unsqueeze_": _reshaping_inplace("unsqueeze_", lambda t, dim: t.unsqueeze(dim)),
    "index_put": index_put,
    "index_put_": index_put_,
}
