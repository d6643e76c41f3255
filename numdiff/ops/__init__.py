"""numdiff's differentiable ops; `registry.OPS` lists every one. See README.md here for the contract."""

from numdiff.ops.registry import OPS, register

__all__ = ["OPS", "register"]
