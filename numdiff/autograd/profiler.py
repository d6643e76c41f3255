"""torch.autograd.profiler, PyTorch's older profiler API, on numdiff.profiler's recorder.

`profile` takes the legacy signature (`enabled` first, `use_cuda`, `use_kineto`, ...) and gives
the same results as ``numdiff.profiler.profile``: `key_averages()`, `table()` through it,
`export_chrome_trace`, and `function_events`. `record_function` is the same labelled range.

>>> import numdiff
>>> from numdiff.autograd.profiler import profile, record_function
>>> with profile() as prof:
...     with record_function("step"):
...         y = numdiff.ones(3).exp().sum()
>>> "step" in prof.key_averages().table()
True
"""

from __future__ import annotations

from typing import Any

from numdiff.profiler import EventList, record_function
from numdiff.profiler import profile as _profile

__all__ = ["EventList", "profile", "record_function"]


def __dir__() -> list[str]:
    return sorted(__all__)


class profile(_profile):  # noqa: N801 - PyTorch's name
    """The legacy context manager: records while `enabled`, otherwise does nothing."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: Any = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, **ignored: Any) -> None:
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules)
        self.enabled = enabled

    def __enter__(self) -> profile:
        if self.enabled:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            self.stop()

    @property
    def function_events(self) -> EventList:
        """Every recorded event, as PyTorch's legacy profiler names them."""
        return self.events()
