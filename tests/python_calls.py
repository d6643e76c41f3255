"""The Python functions a piece of code calls in given source files, for tests that pin how much
Python work numdiff's hot paths do (a count of calls, not a time)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def calls_into(files: tuple[str, ...], run: Callable[[], Any]) -> list[str]:
    """The names of the Python functions defined in `files` (path endings) that `run()` calls, in order."""
    seen: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.endswith(files):
            seen.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return seen
