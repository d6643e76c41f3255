"""torch.version's fields, for programs that print or check them.

numdiff ships no CUDA build: its CUDA kernels are compiled by Numba when first used, so `cuda`
and `hip` are None, as in a CPU-only PyTorch; ``numdiff.cuda.is_available()`` says whether a GPU
can run them.

>>> import numdiff
>>> numdiff.version.__version__ == numdiff.__version__
True
"""

from __future__ import annotations

__all__ = ["cuda", "debug", "git_version", "hip"]

__version__ = "0.1.0"
cuda: str | None = None
hip: str | None = None
debug = False
git_version = "unknown"


def __dir__() -> list[str]:
    return sorted(__all__)
