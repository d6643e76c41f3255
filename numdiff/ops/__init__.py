"""numdiff's differentiable ops; `registry.SPECS` holds every one's spec (`OPS`: its Function). See
README.md here for the contract."""

from numdiff.ops import profiler
from numdiff.ops.registry import OPS, SPECS, OpSpec, attach, register, spec

__all__ = ["OPS", "SPECS", "OpSpec", "attach", "profiler", "register", "spec"]
