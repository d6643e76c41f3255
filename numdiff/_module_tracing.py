"""The one switch Module.__call__ reads for numdiff.fx: `tracer` is None unless a symbolic trace runs.

While ``numdiff.fx.Tracer.trace`` runs, `tracer` is that Tracer, and every Module call goes to its
``call_module`` (which records a leaf module as one Node, or traces through the module's
forward). One module-attribute read per Module call otherwise, as for numdiff._profiling.
Kept at the bottom layer so numdiff.nn can read it without importing numdiff.fx.
"""

from __future__ import annotations

from typing import Any

tracer: Any = None
