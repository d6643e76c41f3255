"""The one switch numdiff's hot paths read for the profiler: `recorder` is None unless one records.

Op calls, backward nodes, module calls and optimizer steps check ``_profiling.recorder`` (one
module-attribute read) and, only while numdiff.profiler.profile is recording, hand the call to
it. Kept at the bottom layer so the autograd core can read it without importing the profiler.
"""

from __future__ import annotations

from typing import Any

recorder: Any = None
