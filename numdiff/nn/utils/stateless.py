"""numdiff.nn.utils.stateless: PyTorch 1.x's functional_call, which older MAML code imports. PyTorch 2
keeps it with a FutureWarning pointing to torch.func.functional_call; so does numdiff."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from numdiff.func.functional_call import functional_call as _functional_call

__all__ = ["functional_call"]


def functional_call(module: Any, parameters_and_buffers: Mapping, args: Any = None, kwargs: Mapping | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """numdiff.func.functional_call under its old name, with PyTorch's deprecation warning.

    >>> out = numdiff.nn.utils.stateless.functional_call(model, dict(model.named_parameters()), (x,))  # doctest: +SKIP
    """
    warnings.warn(
        "numdiff.nn.utils.stateless.functional_call is deprecated, as torch.nn.utils.stateless.functional_call "
        "is since PyTorch 2.0; use numdiff.func.functional_call, a drop-in replacement",
        FutureWarning,
        stacklevel=2,
    )
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
