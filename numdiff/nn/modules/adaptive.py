"""AdaptiveLogSoftmaxWithLoss: the adaptive softmax of Grave et al. for large vocabularies.

Classes are split at `cutoffs` into a shortlist (the frequent ones) and tail clusters. The head, a
Linear to ``shortlist + clusters`` logits, scores each shortlist class and each cluster as a whole;
cluster i has its own two Linears (in_features -> in_features // div_value ** (i + 1) -> its
classes). A class's log-probability is its head log-probability if it is in the shortlist, else
its cluster's head log-probability plus its log-probability within the cluster. Composed from
Linear, log_softmax, gather and index_add, so gradients and second derivatives come for free;
each cluster's Linears run on that cluster's rows only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from numdiff.creation import tensor, zeros
from numdiff.nn import _implementations as functional
from numdiff.nn.modules.container import ModuleList, Sequential
from numdiff.nn.modules.linear import Linear
from numdiff.nn.modules.module import Module
from numdiff.ops.joining import cat
from numdiff.tensor import Tensor


class _ASMoutput(NamedTuple):
    output: Tensor
    loss: Tensor


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax over `n_classes` split at `cutoffs`; forward(input, target) gives each
    row's target log-probability (``output``) and the mean negative log-likelihood (``loss``).

    >>> asm = AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs=[5, 12])
    >>> asm(numdiff.randn(3, 8), numdiff.tensor([1, 7, 19])).loss.shape
    numdiff.Size([])
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or any(int(c) != c for c in cutoffs) or min(cutoffs) <= 0
                or max(cutoffs) > n_classes - 1 or len(set(cutoffs)) != len(cutoffs)):
            raise ValueError(
                "AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of unique, positive integers sorted in "
                f"an increasing order, where each value is between 1 and n_classes-1 ({n_classes - 1}), got {cutoffs}"
            )
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = [int(c) for c in cutoffs] + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList([
            Sequential(Linear(in_features, int(in_features // div_value ** (i + 1)), bias=False, device=device, dtype=dtype),
                       Linear(int(in_features // div_value ** (i + 1)), self.cutoffs[i + 1] - self.cutoffs[i], bias=False,
                              device=device, dtype=dtype))
            for i in range(self.n_clusters)
        ])  # fmt: skip

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for projection, classes in self.tail:
            projection.reset_parameters()
            classes.reset_parameters()

    def forward(self, input: Tensor, target: Tensor) -> _ASMoutput:
        name = "AdaptiveLogSoftmaxWithLoss"
        if target.ndim == 1:
            if input.ndim != 2:
                raise RuntimeError(f"{name}: a 1-D target expects a 2-D input, got input shape {tuple(input.shape)}")
            if input.shape[0] != target.shape[0]:
                raise RuntimeError(f"{name}: input and target should have the same size in the batch dimension, got "
                                   f"{tuple(input.shape)} and {tuple(target.shape)}")
        elif target.ndim == 0:
            if input.ndim != 1:
                raise RuntimeError(f"{name}: a 0-D target expects a 1-D input, got input shape {tuple(input.shape)}")
        else:
            raise RuntimeError(f"{name}: 0-D or 1-D target tensor expected, multi-target not supported, got shape "
                               f"{tuple(target.shape)}")
        batched = target.ndim == 1
        rows = input if batched else input.unsqueeze(0)
        labels = (target if batched else target.unsqueeze(0)).long()
        values = labels.detach().cpu().numpy()
        if values.size and (values.min() < 0 or values.max() >= self.n_classes):
            raise RuntimeError(f"{name}: target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{values.min()}, {values.max()}] were found")
        # The head picks the class itself in the shortlist, its cluster's entry elsewhere.
        head_index = values.copy()
        output = zeros(values.size, dtype=rows.dtype, device=rows.device)
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            members = np.flatnonzero((values >= low) & (values < high))
            if members.size == 0:
                continue
            head_index[members] = self.shortlist_size + i
            member_rows = rows.index_select(0, _as_index(members, rows))
            within = functional.log_softmax(self.tail[i](member_rows), dim=1)
            relative = _as_index(values[members] - low, rows).unsqueeze(1)
            output = output.index_add(0, _as_index(members, rows), within.gather(1, relative).squeeze(1))
        head = functional.log_softmax(self.head(rows), dim=1)
        output = output + head.gather(1, _as_index(head_index, rows).unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head = functional.log_softmax(head_output, dim=1)
        parts = [head[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            within = functional.log_softmax(self.tail[i](input), dim=1)
            parts.append(within + head[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of all n_classes for (N, in_features) -> (N, n_classes), or (in_features,) -> (n_classes,)."""
        batched = input.ndim > 1
        rows = input if batched else input.unsqueeze(0)
        if rows.ndim != 2 or rows.shape[1] != self.in_features:
            raise ValueError(f"AdaptiveLogSoftmaxWithLoss.log_prob: expected input of shape (N, {self.in_features}) "
                             f"or ({self.in_features},), got {tuple(input.shape)}")
        out = self._full_log_prob(rows, self.head(rows))
        return out if batched else out.squeeze(0)

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row; the full distribution is computed only for rows whose
        best head entry is a cluster (same result as log_prob(input).argmax(1))."""
        batched = input.ndim > 1
        rows = input if batched else input.unsqueeze(0)
        head_output = self.head(rows)
        best = head_output.argmax(dim=1)
        outside = (best >= self.shortlist_size).detach().cpu().numpy()
        if outside.any():
            chosen = _as_index(np.flatnonzero(outside), rows)
            full = self._full_log_prob(rows.index_select(0, chosen), head_output.index_select(0, chosen))
            best = best.index_put((chosen,), full.argmax(dim=1))
        return best if batched else best.squeeze(0)


def _as_index(values: np.ndarray, like: Tensor) -> Tensor:
    return tensor(np.asarray(values, dtype=np.int64), device=like.device)
