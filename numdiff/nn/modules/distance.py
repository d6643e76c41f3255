"""Distance layers: CosineSimilarity and PairwiseDistance over numdiff.nn.functional."""

from __future__ import annotations

from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.nn.modules.module import Module
from numdiff.tensor import Tensor


class CosineSimilarity(Module):
    """cosine_similarity(x1, x2, dim, eps) as a layer."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return functional.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """pairwise_distance(x1, x2, p, eps, keepdim) as a layer."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return functional.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
