"""numdiff.meta: the meta device, tensors with a shape, a dtype and strides but no storage.

``numdiff.empty(2, 3, device="meta")``, ``with numdiff.device("meta"): model = Net()`` and
``model.to("meta")`` make them; ops on them work out their results' shapes and dtypes only, so a
model of any size is built and run through in no memory and no time. ``module.to_empty(device=...)``
then gives such a model storage. Reading values (``item``, ``numpy``, a copy to another device)
raises :class:`MetaTensorDataError`, as PyTorch's meta tensors do.

>>> x = numdiff.empty(1000, 1000, device="meta")
>>> (x @ x).shape, x.device
(numdiff.Size([1000, 1000]), device(type='meta'))
"""

from __future__ import annotations

from numdiff.meta.array import MetaArray, MetaTensorDataError

__all__ = ["MetaArray", "MetaTensorDataError"]


def __dir__() -> list[str]:
    return sorted(__all__)
