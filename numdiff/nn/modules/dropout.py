"""Dropout: zero random elements while training, identity in eval mode."""

from __future__ import annotations

from numdiff.nn import functional
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
