"""Cases for ctc_loss (numdiff/ops/ctc.py), against a NumPy reference that sums the probability of
every alignment: each of the C**T label paths that collapses (repeats merged, then blanks removed)
to the target. Tiny shapes keep the enumeration cheap. log_probs = log_softmax(x): PyTorch's (and
numdiff's) ctc_loss gradient is the logits' gradient, which equals the derivative only for
normalised log-probabilities; so the cases differentiate x, and gradcheck checks it exactly."""

from __future__ import annotations

import itertools

import numpy as np

import numdiff
from tests.ops.op_cases import OpCase, args, constant, normal

F = numdiff.nn.functional


def _collapse(path: tuple[int, ...], blank: int) -> tuple[int, ...]:
    merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
    return tuple(c for c in merged if c != blank)


def ctc_reference(
    log_probs: np.ndarray, targets, input_lengths, target_lengths, blank: int = 0
) -> np.ndarray:
    """Per-item -log(sum over alignments of prod_t p[t, path[t]]) of (T, N, C) log-probabilities,
    by enumeration (targets padded (N, S))."""
    classes = log_probs.shape[2]
    losses = []
    for n, (steps, length) in enumerate(zip(input_lengths, target_lengths)):
        target = tuple(int(c) for c in targets[n][:length])
        total = sum(
            np.exp(sum(log_probs[t, n, c] for t, c in enumerate(path)))
            for path in itertools.product(range(classes), repeat=int(steps))
            if _collapse(path, blank) == target
        )
        losses.append(-np.log(total) if total > 0 else np.inf)
    return np.array(losses)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=2, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=2, keepdims=True))


_TARGETS = np.array([[1, 1, 2], [2, 0, 0], [1, 2, 1]])  # a repeated label, a single one, a full row
_INPUT_LENGTHS, _TARGET_LENGTHS = [5, 4, 5], [2, 1, 3]

CASES = [
    OpCase(
        "ctc_loss", "none-repeats-padded", args(normal(5, 3, 3), constant(_TARGETS)),
        lambda x, t: F.ctc_loss(x.log_softmax(2), t, _INPUT_LENGTHS, _TARGET_LENGTHS, reduction="none"),
        lambda x, t: ctc_reference(_log_softmax(x), t, _INPUT_LENGTHS, _TARGET_LENGTHS),
        second_order=False, forward_rtol=1e-10,
    ),
    OpCase(  # blank = 2, an empty target, the targets concatenated, the mean over target lengths
        "ctc_loss", "mean-blank-2-concatenated", args(normal(4, 2, 3), constant(np.array([0, 1, 0]))),
        lambda x, t: F.ctc_loss(x.log_softmax(2), t, [4, 3], [3, 0], blank=2),
        lambda x, t: (ctc_reference(_log_softmax(x), [[0, 1, 0], []], [4, 3], [3, 0], blank=2) / [3, 1]).mean(),
        second_order=False, forward_rtol=1e-10,
    ),
]  # fmt: skip
