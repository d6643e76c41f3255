"""Which numdiff.func transforms are running: read by Function.apply and the in-place ops.

Function.apply checks `transforms.vmap_depth` (one attribute read) and hands every op to
`transforms.batched_apply` while a vmap is active; numdiff.func.vmap installs that handler.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class TransformState:
    """The active transform levels: vmap batch sizes and randomness modes, innermost last, and the
    grad-level depth."""

    def __init__(self) -> None:
        self.vmap_depth = 0
        self.batch_sizes: list[int] = []
        self.grad_depth = 0
        self.randomness: list[str] = []
        self.batched_apply: Callable[[Any, tuple, dict], Any] | None = None

    @property
    def active(self) -> bool:
        return bool(self.vmap_depth or self.grad_depth)


transforms = TransformState()
