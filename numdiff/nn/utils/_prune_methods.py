"""The pruning methods of numdiff.nn.utils.prune: which entries (or channels) each one masks."""

from __future__ import annotations

import numbers
from typing import Any

from numdiff.creation import rand, rand_like, zeros_like
from numdiff.nn.modules.module import Module
from numdiff.nn.utils._prune_base import BasePruningMethod
from numdiff.ops.sorting import topk
from numdiff.tensor import Tensor


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name)


def _check_amount(amount: Any) -> None:
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise TypeError(f"prune: amount must be an int or a float, got {type(amount).__name__}")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0
    ):
        raise ValueError(f"prune: amount={amount} must be a non-negative int or a float in [0, 1]")


def _count(amount: Any, size: int) -> int:
    """How many of `size` entries (or channels) `amount` prunes."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"prune: amount={amount} should be smaller than the number of parameters to prune={size}")
        return int(amount)
    return round(float(amount) * size)


class RandomUnstructured(BasePruningMethod):
    """Prunes `amount` entries (a count or a fraction) chosen at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        n = _count(self.amount, t.numel())
        mask = default_mask.clone()
        if n:
            mask.view(-1)[topk(rand_like(t).view(-1), k=n).indices] = 0
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the `amount` entries of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        n = _count(self.amount, t.numel())
        mask = default_mask.clone()
        if n:
            mask.view(-1)[topk(t.abs().view(-1), k=n, largest=False).indices] = 0
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, importance_scores: Tensor | None = None) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _structured_mask(t: Tensor, dim: int, channels: Tensor) -> Tensor:
    mask = zeros_like(t)
    index = tuple(channels if d == dim else slice(None) for d in range(t.dim()))
    mask[index] = 1
    return mask


def _check_structured(t: Tensor, dim: int) -> None:
    if t.dim() <= 1:
        raise ValueError(f"structured pruning needs a tensor of at least 2 dims, got shape {tuple(t.shape)}")
    if not -t.dim() <= dim < t.dim():
        raise IndexError(f"structured pruning: dim={dim} is out of range for a tensor of {t.dim()} dims")


class RandomStructured(BasePruningMethod):
    """Prunes `amount` whole channels along `dim`, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _check_structured(t, self.dim)
        channels = t.shape[self.dim]
        n = _count(self.amount, channels)
        if n == 0:
            return default_mask
        keep = topk(rand(channels), k=channels - n).indices
        return _structured_mask(t, self.dim % t.dim(), keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, dim: int = -1) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the `amount` channels along `dim` of smallest `n`-norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, n: Any, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _check_structured(t, self.dim)
        dim = self.dim % t.dim()
        channels = t.shape[dim]
        n_prune = _count(self.amount, channels)
        if n_prune == 0:
            return default_mask
        others = [d for d in range(t.dim()) if d != dim]
        norms = t.norm(p=self.n, dim=others)
        keep = topk(norms, k=channels - n_prune, largest=True).indices
        return _structured_mask(t, dim, keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, n: Any, dim: int, importance_scores: Tensor | None = None) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given `mask` is zero."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise ValueError(f"custom_from_mask: mask of shape {tuple(self.mask.shape)} must match {tuple(default_mask.shape)}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, mask=mask)
