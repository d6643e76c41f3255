"""torch.utils.model_zoo, PyTorch's older name for the hub's checkpoint loader."""

from __future__ import annotations

from numdiff.hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]


def __dir__() -> list[str]:
    return sorted(__all__)
