"""torch.fx.experimental: graph optimizations (``optimization.fuse``)."""

from numdiff.fx.experimental import optimization

__all__ = ["optimization"]


def __dir__() -> list[str]:
    return sorted(__all__)
