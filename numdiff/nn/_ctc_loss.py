"""nn.functional.ctc_loss: PyTorch's arguments, their types checked here; the op
(numdiff.ops.ctc) checks their values before its kernel runs, also in a compiled replay.

log_probs is (T, N, C), or (T, C) for one unbatched sequence; targets are padded (N, S) or the
N targets concatenated (sum(target_lengths),) (unbatched: (1, S), or (S,) holding exactly the
target); the lengths are integer Tensors, lists, tuples or (unbatched) ints. The reductions are
PyTorch's: 'none' gives each item's loss, 'sum' their sum, 'mean' the mean of each loss divided
by its target length (clamped to 1). PyTorch reads target values without checking them (a value
>= C reads outside the tensor); numdiff refuses a target value outside [0, C) or equal to blank,
naming the item.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from numdiff.nn._losses import _reduction
from numdiff.ops.ctc import CtcArgumentError, CtcLoss
from numdiff.tensor import Tensor

__all__ = ["ctc_loss"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
Lengths = Tensor | Sequence[int] | int


def _as_array(name: str, value: Tensor | Lengths) -> np.ndarray:
    """A Tensor's own array (numdiff.compile then reads it as a program value), or a list's."""
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, (list, tuple, int, np.integer)) and not isinstance(value, bool):
        array = np.asarray(value)
        return array.astype(np.int64) if array.size == 0 else array  # an empty list reads as float64
    raise TypeError(f"ctc_loss: {name} must be a Tensor, a list or tuple of ints, got {type(value).__name__}")


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Lengths,
    target_lengths: Lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """The connectionist temporal classification loss of log-probabilities (T, N, C) (or (T, C))
    against unaligned targets, as torch.nn.functional.ctc_loss.

    >>> log_probs = numdiff.randn(50, 2, 20).log_softmax(2)
    >>> targets = numdiff.randint(1, 20, (2, 10))
    >>> ctc_loss(log_probs, targets, [50, 40], [10, 7])
    """
    reduction = _reduction("ctc_loss", None, None, reduction)
    if not isinstance(log_probs, Tensor):
        raise TypeError(f"ctc_loss: log_probs must be a Tensor, got {type(log_probs).__name__}")
    if log_probs.dtype.numpy not in _FLOATS:
        raise TypeError(f"ctc_loss: log_probs must be float32 or float64, got {log_probs.dtype}")
    unbatched = log_probs.ndim == 2
    if log_probs.ndim not in (2, 3):
        raise CtcArgumentError(
            f"ctc_loss: log_probs must be (T, N, C) or unbatched (T, C), got shape {tuple(log_probs.shape)}"
        )
    if unbatched:  # one item: 1-D targets are then its concatenated form, of exactly its length (as PyTorch)
        log_probs = log_probs.unsqueeze(1)
    steps, items, classes = log_probs.shape
    if steps == 0 or items == 0:
        raise CtcArgumentError(f"ctc_loss: log_probs must not be empty, got shape {tuple(log_probs.shape)}")
    if not isinstance(targets, Tensor):
        raise TypeError(f"ctc_loss: targets must be a Tensor, got {type(targets).__name__}")
    if isinstance(blank, bool) or not isinstance(blank, (int, np.integer)):
        raise TypeError(f"ctc_loss: blank must be an int, got {blank!r}")
    loss = CtcLoss.apply(
        log_probs, targets=targets._data, input_lengths=_as_array("input_lengths", input_lengths),
        target_lengths=_as_array("target_lengths", target_lengths), blank=int(blank), zero_infinity=bool(zero_infinity),
        reduction=reduction,
    )  # fmt: skip
    return loss[0] if unbatched and reduction == "none" else loss
