"""numdiff._inductor: the few ``torch._inductor`` helpers that programs and tutorials call."""

from numdiff._inductor import utils

__all__ = ["utils"]
