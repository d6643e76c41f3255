"""AlphaDropout, FeatureAlphaDropout, LocalResponseNorm, CrossMapLRN2d and EmbeddingBag: the layers over
numdiff.nn.functional's alpha_dropout, feature_alpha_dropout, local_response_norm and embedding_bag, and
CrossMapLRN2d's own forward (numdiff.nn._layer_functions.cross_map_lrn2d)."""

from __future__ import annotations

from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.creation import empty
from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.nn import init
from numdiff.nn._layer_functions import cross_map_lrn2d
from numdiff.nn.modules.dropout import Dropout
from numdiff.nn.modules.module import Module
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Tensor


class AlphaDropout(Dropout):
    """alpha_dropout while training (SELU networks: keeps zero mean and unit variance)."""

    def forward(self, input: Tensor) -> Tensor:
        return functional.alpha_dropout(input, self.p, self.training, self.inplace)


class FeatureAlphaDropout(Dropout):
    """feature_alpha_dropout while training: whole channels take SELU's saturation value."""

    def forward(self, input: Tensor) -> Tensor:
        return functional.feature_alpha_dropout(input, self.p, self.training, self.inplace)


class LocalResponseNorm(Module):
    """Each element divided by (k + alpha / size * sum of squares over `size` neighbouring channels) ** beta."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return functional.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(LocalResponseNorm):
    """PyTorch's older response normalisation over channels of an (N, C, H, W) input: like
    LocalResponseNorm, but the window spans channels c - p + 1 .. c + p - 1 for p = (size - 1) // 2 + 1
    and, as PyTorch's running sum, keeps channel 0 in every window from channel p on.

    >>> CrossMapLRN2d(3)(numdiff.ones(1, 4, 2, 2)).shape
    numdiff.Size([1, 4, 2, 2])
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)

    def forward(self, input: Tensor) -> Tensor:
        return cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)


class EmbeddingBag(Module):
    """The sum, mean or max of the rows of a (num_embeddings, embedding_dim) weight (initialised
    N(0, 1)) over each bag of indices; see numdiff.nn.functional.embedding_bag.

    >>> EmbeddingBag(10, 3, mode="sum")(numdiff.tensor([[1, 2], [4, 9]])).shape
    numdiff.Size([2, 3])
    """

    def __init__(
        self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None, norm_type: float = 2.0,
        scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False, _weight: Tensor | None = None,
        include_last_offset: bool = False, padding_idx: int | None = None, device: Any = None, dtype: Any = None,
    ) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"EmbeddingBag: padding_idx must be within [{-num_embeddings}, {num_embeddings - 1}], got {padding_idx}")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.mode, self.sparse, self.include_last_offset, self.padding_idx = mode, sparse, include_last_offset, padding_idx
        if _weight is None:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, dtype=dtype, device=device))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"EmbeddingBag: _weight must have shape ({num_embeddings}, {embedding_dim}), got {tuple(_weight.shape)}")
            self.weight = Parameter(_weight)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor, offsets: Tensor | None = None, per_sample_weights: Tensor | None = None) -> Tensor:
        return functional.embedding_bag(
            input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq, self.mode, self.sparse,
            per_sample_weights, self.include_last_offset, self.padding_idx,
        )

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"
