"""``torch._functorch.apis``: vmap, grad and chunk_vmap, on numdiff.func.

>>> from numdiff._functorch.apis import chunk_vmap
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numdiff.func import grad, grad_and_value, vmap

__all__ = ["chunk_vmap", "grad", "grad_and_value", "vmap"]


def __dir__() -> list[str]:
    return sorted(__all__)


def chunk_vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error",
               chunks: int = 2) -> Callable[..., Any]:
    """vmap(func) run over the batch in `chunks` pieces (functorch.experimental.chunk_vmap).

    >>> chunk_vmap(numdiff.sin, chunks=2)(numdiff.zeros(4, 3)).shape
    numdiff.Size([4, 3])
    """
    if not isinstance(chunks, int) or chunks < 1:
        raise ValueError(f"chunk_vmap: chunks must be a positive int, got {chunks!r}")

    def chunked(*args: Any, **kwargs: Any) -> Any:
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        sizes = [a.shape[d] for a, d in zip(args, dims) if d is not None and hasattr(a, "shape")]
        if not sizes:
            raise ValueError("chunk_vmap: no input is batched (every in_dim is None)")
        chunk_size = -(-sizes[0] // chunks)
        return vmap(func, in_dims, out_dims, randomness, chunk_size=chunk_size)(*args, **kwargs)

    return chunked
