"""numdiff.xpu: PyTorch's torch.xpu module paths. numdiff has no XPU device, so the probes answer
as PyTorch does without one (``is_available()`` is False) and using the device raises."""

from __future__ import annotations

from numdiff._absent_device import AbsentDevice

_DEVICE = AbsentDevice("xpu")

__all__ = [
    "current_device", "device_count", "empty_cache", "get_device_name", "is_available", "is_initialized",
    "manual_seed", "manual_seed_all", "seed", "seed_all", "set_device", "synchronize",
]


def __dir__() -> list[str]:
    return sorted(__all__)


def is_available() -> bool:
    """False: numdiff has no XPU device."""
    return _DEVICE.is_available()


def is_initialized() -> bool:
    """False: there is no XPU device to initialize."""
    return _DEVICE.is_initialized()


def device_count() -> int:
    """0: numdiff has no XPU device."""
    return _DEVICE.device_count()


def manual_seed(seed: int) -> None:
    """A no-op, as in PyTorch on a machine without the device."""
    _DEVICE.seeding(seed)


def manual_seed_all(seed: int) -> None:
    """A no-op, as in PyTorch on a machine without the device."""
    _DEVICE.seeding(seed)


def seed() -> None:
    """A no-op, as in PyTorch on a machine without the device."""
    _DEVICE.seeding()


def seed_all() -> None:
    """A no-op, as in PyTorch on a machine without the device."""
    _DEVICE.seeding()


def empty_cache() -> None:
    """A no-op: there is no XPU memory to release."""
    _DEVICE.empty_cache()


current_device = _DEVICE.unavailable("current_device")
set_device = _DEVICE.unavailable("set_device")
get_device_name = _DEVICE.unavailable("get_device_name")
synchronize = _DEVICE.unavailable("synchronize")
