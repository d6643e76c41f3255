"""torch.cuda.amp's names: autocast on CUDA (float16 by default) and GradScaler, from numdiff.amp."""

from __future__ import annotations

from typing import Any

from numdiff import amp as _amp
from numdiff.amp import GradScaler as _GradScaler


class autocast(_amp.autocast):  # noqa: N801 - PyTorch's name
    """``torch.cuda.amp.autocast(enabled, dtype)``: numdiff.autocast("cuda", ...)."""

    def __init__(self, enabled: bool = True, dtype: Any = None, cache_enabled: bool = True) -> None:
        super().__init__("cuda", dtype, enabled, cache_enabled)


class GradScaler(_GradScaler):
    """``torch.cuda.amp.GradScaler(...)``: numdiff.amp.GradScaler("cuda", ...)."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:  # fmt: skip
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


__all__ = ["GradScaler", "autocast"]


def __dir__() -> list[str]:
    return sorted(__all__)
