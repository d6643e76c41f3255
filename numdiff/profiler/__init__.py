"""numdiff.profiler: where a step's time goes, with torch.profiler's names.

>>> with numdiff.profiler.profile(record_shapes=True, profile_memory=True) as prof:
...     with numdiff.profiler.record_function("step"):
...         loss = model(x).sum()
...         loss.backward()
>>> print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
>>> prof.export_chrome_trace("trace.json")     # open in Perfetto
"""

from numdiff.profiler._events import EventList, FunctionEvent, FunctionEventAvg
from numdiff.profiler._profile import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

__all__ = [
    "EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction", "ProfilerActivity", "profile",
    "record_function", "schedule", "supported_activities", "tensorboard_trace_handler",
]  # fmt: skip


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
