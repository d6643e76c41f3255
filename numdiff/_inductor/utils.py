"""``torch._inductor.utils.fresh_inductor_cache``, mapped onto numdiff.compile.

Tutorials wrap compile-time measurements in ``with fresh_inductor_cache():`` so that nothing
compiled earlier is reused. numdiff.compile keeps each compiled function's traces on that
function, so functions compiled inside the block already start with no trace; the generated
kernels that numba caches on disk are reused, as Inductor reuses its Triton autotuning cache
only outside the block.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from numdiff.compiler import reset

__all__ = ["fresh_inductor_cache"]


@contextlib.contextmanager
def fresh_inductor_cache(cache_entries: dict[str, Any] | None = None, dir: str | None = None,  # noqa: A002
                         delete: bool = True) -> Iterator[None]:
    """Run the block with no compiled traces carried in from before it (see the module docstring).

    >>> with fresh_inductor_cache():
    ...     f = numdiff.compile(fn)
    """
    reset()
    try:
        yield
    finally:
        reset()
