"""numdiff.mtia: PyTorch's torch.mtia module paths. numdiff has no MTIA device, so the probes answer
as PyTorch does without one (``is_available()`` is False) and using the device raises."""

from __future__ import annotations

from numdiff._absent_device import absent_device_functions

_FUNCTIONS = absent_device_functions("mtia")
globals().update(_FUNCTIONS)
__all__ = sorted(_FUNCTIONS)


def __dir__() -> list[str]:
    return sorted(__all__)
