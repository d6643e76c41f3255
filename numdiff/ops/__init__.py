"""numdiff's differentiable ops; `registry.SPECS` holds every one's spec (`OPS`: its Function). See
README.md here for the contract."""

from numdiff._lazy import lazy_module
from numdiff.ops.registry import OPS, SPECS, OpSpec, attach, register, spec

# torch.ops.profiler: loaded on first use, since numdiff.profiler brings Numba in (import numdiff stays cheap).
profiler = lazy_module("numdiff.ops.profiler")

__all__ = ["OPS", "SPECS", "OpSpec", "attach", "profiler", "register", "spec"]
