"""``torch._functorch.batch_norm_replacement``: replace_all_batch_norm_modules_, on numdiff.func.

>>> from numdiff._functorch.batch_norm_replacement import replace_all_batch_norm_modules_
"""

from numdiff.func import replace_all_batch_norm_modules_

__all__ = ["replace_all_batch_norm_modules_"]


def __dir__() -> list[str]:
    return sorted(__all__)
