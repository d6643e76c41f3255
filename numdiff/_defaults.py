"""The defaults factories use when no dtype or device is given (set_default_dtype, set_default_device)."""

from numdiff._device import get_default_device, set_default_device
from numdiff._dtype import get_default_dtype, set_default_dtype

__all__ = ["get_default_device", "get_default_dtype", "set_default_device", "set_default_dtype"]
