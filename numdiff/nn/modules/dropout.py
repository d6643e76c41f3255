"""Dropout: zero random elements (Dropout) or whole channels (Dropout1d/2d/3d) while training,
identity in eval mode."""

from __future__ import annotations

from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.nn.modules.module import Module
from numdiff.tensor import Tensor


class Dropout(Module):
    """Zero each element with probability p during training, scaling the rest by 1 / (1 - p).

    >>> layer = Dropout(0.5).eval()
    >>> layer(x) is x
    True
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return functional.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class _ChannelDropout(Dropout):
    """Dropout1d/2d/3d: the same arguments as Dropout, whole channels zeroed."""

    _function = ""

    def forward(self, input: Tensor) -> Tensor:
        return getattr(functional, self._function)(input, self.p, self.training, self.inplace)


class Dropout1d(_ChannelDropout):
    """Zero whole channels of (N, C, L) or (C, L) inputs with probability p during training."""

    _function = "dropout1d"


class Dropout2d(_ChannelDropout):
    """Zero whole channels of (N, C, H, W) or (C, H, W) inputs with probability p during training."""

    _function = "dropout2d"


class Dropout3d(_ChannelDropout):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability p during training."""

    _function = "dropout3d"
