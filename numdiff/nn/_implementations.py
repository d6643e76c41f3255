"""numdiff.nn.functional as numdiff's own layers call it: for each public function whose
implementation hands a protocol operand over by itself (numdiff.overrides.hands_over), that
implementation, without the export wrapper that checks every argument's type; the others as
exported. A module's forward pays for the wrapper only where a user's call would need it, and a
numdiff.fx Proxy passed to it is still traced (the root module's forward, or a module traced
through rather than kept as a leaf).
"""

from __future__ import annotations

from typing import Any

from numdiff.nn import functional as _functional


def _implementation(public: Any) -> Any:
    inner = getattr(public, "__wrapped__", None)
    return inner if getattr(inner, "__numdiff_hands_over__", False) else public


globals().update({name: _implementation(getattr(_functional, name)) for name in _functional.__all__})
