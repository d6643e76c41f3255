"""CUDA math switches (numdiff never uses TF32 or reduced-precision reductions; see numdiff.backends)."""

from __future__ import annotations

from types import SimpleNamespace

# torch.backends.cuda.matmul.allow_tf32 and its siblings: kept, with PyTorch's defaults.
matmul = SimpleNamespace(
    allow_tf32=False,
    allow_fp16_reduced_precision_reduction=True,
    allow_bf16_reduced_precision_reduction=True,
)


def is_built() -> bool:
    """True when numba-cuda (numdiff's CUDA backend) is installed."""
    try:
        import numba.cuda  # noqa: F401 - only whether it imports
    except ImportError:
        return False
    return True
