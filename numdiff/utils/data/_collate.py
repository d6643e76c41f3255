"""Collation: how a DataLoader turns the samples it fetched into what it yields, as PyTorch's
default_collate (a batch) and default_convert (one sample, with batch_size=None)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from numdiff import tensor as make_tensor
from numdiff.backend import is_numpy
from numdiff.ops.joining import stack
from numdiff.tensor import Tensor


def default_collate(batch: Sequence[Any]) -> Any:
    """Merge a list of samples into a batch, recursively, as PyTorch's default_collate.

    Tensors and NumPy arrays are stacked along a new first dimension; ints become an int64
    tensor, floats a float64 tensor, bools a bool tensor; strings stay as the batch held them (a
    list at the top and in a dict, a tuple inside a sample's tuple or list, as PyTorch's); dicts collate
    per key; tuples and lists collate per position (returned as a list; namedtuples keep their type).

    >>> default_collate([(numdiff.ones(2), 0), (numdiff.zeros(2), 1)])
    [tensor([[1., 1.],
            [0., 0.]]), tensor([0, 1])]
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        shapes = {tuple(t.shape) for t in batch}
        if len(shapes) > 1:
            sizes = [list(t.shape) for t in batch]
            raise RuntimeError(
                f"default_collate: stack expects each tensor to be equal size, but got {sizes}"
            )
        return stack(list(batch))
    if is_numpy(elem):
        if elem.dtype.kind not in "biuf":
            raise TypeError(
                f"default_collate: numpy arrays of dtype {elem.dtype} cannot be made into tensors"
            )
        return make_tensor(np.stack(batch))
    if isinstance(elem, np.generic):
        return make_tensor(np.array(batch))
    if isinstance(elem, bool):
        return make_tensor(list(batch))
    if isinstance(elem, int):
        return make_tensor(list(batch))
    if isinstance(elem, float):
        return make_tensor(list(batch), dtype="float64")
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(collated)
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(column) for column in zip(*batch)))
    if isinstance(elem, Sequence):
        if len({len(sample) for sample in batch}) != 1:
            raise RuntimeError("default_collate: each element in list of batch should be of equal size")
        return [default_collate(column) for column in zip(*batch)]
    raise TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(elem).__name__}"
    )


def default_convert(data: Any) -> Any:
    """One sample made tensor-ready without batching, as PyTorch's default_convert (the collate_fn
    of a DataLoader with batch_size=None): NumPy arrays and scalars become tensors, recursively
    through dicts, namedtuples, tuples (returned as lists) and lists; anything else is kept.

    >>> default_convert({"x": np.zeros(2), "label": 3})
    {'x': tensor([0., 0.], dtype=numdiff.float64), 'label': 3}
    """
    if is_numpy(data) and data.dtype.kind in "biuf":
        return make_tensor(data)
    if isinstance(data, np.generic) and data.dtype.kind in "biuf":
        return make_tensor(data)
    if isinstance(data, Mapping):
        converted = {key: default_convert(value) for key, value in data.items()}
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
