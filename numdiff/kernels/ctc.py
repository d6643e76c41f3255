"""CTC loss (Graves et al., 2006): the forward (alpha) and backward (beta) recursions in log space
and the gradient with respect to the log-probabilities, as PyTorch defines it (CPU, Numba).

For batch item n with input length T_n, target length L and extended target ``l'`` of 2L + 1
labels (blanks around and between the targets: ``l'[s] = blank`` for even s, ``target[s // 2]``
for odd s), with ``lp[t, c] = log_probs[t, n, c]``:

    alpha[0, 0] = lp[0, blank],  alpha[0, 1] = lp[0, l'[1]],  alpha[0, s > 1] = -inf
    alpha[t, s] = logsumexp(alpha[t-1, s], alpha[t-1, s-1], alpha[t-1, s-2] if l'[s] != l'[s-2])
                  + lp[t, l'[s]]
    nll[n]      = -logsumexp(alpha[T_n - 1, 2L], alpha[T_n - 1, 2L - 1])

beta is the same recursion run from t = T_n - 1 down (beta[t, s] includes lp[t, l'[s]], as
PyTorch's), and with ``ab[t, c] = logsumexp over s with l'[s] == c of alpha[t, s] + beta[t, s]``
the unit gradient (the gradient of nll[n] for an upstream gradient of 1) is PyTorch's:

    grad[t, n, c] = exp(lp[t, c]) - exp(ab[t, c] + nll[n] - lp[t, c])     for t < T_n, else 0

That is the gradient with respect to the *logits* when log_probs = log_softmax(logits) (the
softmax term is folded in, so log_softmax's backward, whose correction is the gradient's sum over
classes, 0 here, leaves it unchanged); PyTorch returns it as log_probs.grad also for inputs that
are not normalised, and so does numdiff. An infeasible item (T_n too short for its target) has
nll = inf and a NaN gradient on its first T_n steps, as PyTorch; zero_infinity sets both to 0.

Each logsumexp subtracts the largest term (0 when every term is -inf, so -inf - -inf never
happens); a term of -inf contributes exp(-inf) = 0. Loop nest: batch items in ``prange`` over
`parts` contiguous runs (one per thread, serial build below the grain); within an item, t in
order, and along s each row depends only on the previous one, so the s loop carries no
dependence and runs branch-free (the s-2 term is masked by a precomputed -inf/0 offset) with
numdiff.kernels._vecmath's exp and log, which LLVM vectorises. Extra memory per item: alpha
(T_n, 2L + 1), two beta rows, the class accumulator (C,) and the gathered lp[t, l'] row.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels import _vecmath
from numdiff.kernels._parallel import contiguous_run, serial_and_parallel
from numdiff.kernels._self_healing_cache import njit

__all__ = ["ctc_loss"]


@njit(cache=True, nogil=True, inline="always")
def _log_add3(a, b, c, lowest):
    """log(exp(a) + exp(b) + exp(c)) less its largest term. `lowest` is the dtype's most negative
    finite number: with every term -inf the shift is `lowest`, not -inf, so no -inf - -inf arises
    and the result is log(0) + lowest = -inf. Comparisons rather than max() keep the loop
    calling this free of branches."""
    m = a if a > b else b
    m = m if m > c else c
    m = m if m > lowest else lowest
    return _vecmath.log(_vecmath.exp(a - m) + _vecmath.exp(b - m) + _vecmath.exp(c - m)) + m


@njit(cache=True, nogil=True, inline="always")
def _recursion_step(before, after, picked, skip, lowest, step):
    """One row of the alpha (step = 1: from s-1 and s-2) or beta (step = -1: from s+1 and s+2)
    recursion: after[s + 2] (alpha) or after[s] (beta) from the row before, both padded by two
    -inf entries; picked[s] = lp[t, l'[s]]."""
    width = picked.shape[0]
    if step == 1:
        for s in range(width):
            after[s + 2] = _log_add3(before[s + 2], before[s + 1], before[s] + skip[s], lowest) + picked[s]
    else:
        for s in range(width):
            after[s] = _log_add3(before[s], before[s + 1], before[s + 2] + skip[s + 2], lowest) + picked[s]


@njit(cache=True, nogil=True, error_model="numpy")
def _ctc_item(log_probs, n, labels, skip, steps, zero_infinity, want_grad, lowest, nll, grad):
    """Item n: nll[n] and (if want_grad) grad[:, n, :]. `labels` (2L + 1,) is l'; `skip`
    (2L + 3,) is 0 at s where the s-2 -> s transition is allowed (l'[s] != l'[s-2]), -inf where
    not and at the two entries past the end.

    The gradient's second term sums, per class, exp(alpha[t, s] + beta[t, s] + nll - lp[t, l'[s]])
    over s: each term is the share of the item's paths that pass through (t, s), at most 1, so
    adding them as plain numbers cannot overflow (PyTorch adds the logs, then exponentiates;
    the two agree to rounding). An infeasible item (nll = inf) gets NaN on its first `steps`
    rows, PyTorch's exp(-inf + inf)."""
    dtype = log_probs.dtype
    width = labels.shape[0]
    classes = log_probs.shape[2]
    neg_inf = dtype.type(-np.inf)
    if steps == 0:  # no frames: only the empty target has a path (of probability 1)
        nll[n] = -0.0 if width == 1 else np.inf
    else:
        picked = np.empty(width, dtype)
        alpha = np.full((steps, width + 2), neg_inf, dtype)  # two -inf columns in front: s-1, s-2 at s = 0
        before = np.full(width + 2, neg_inf, dtype)  # rows apart from alpha, so LLVM vectorises the s loop
        after = np.full(width + 2, neg_inf, dtype)
        before[2] = log_probs[0, n, labels[0]]
        if width > 1:
            before[3] = log_probs[0, n, labels[1]]
        alpha[0] = before
        for t in range(1, steps):
            lp = log_probs[t, n]
            for s in range(width):
                picked[s] = lp[labels[s]]
            _recursion_step(before, after, picked, skip, lowest, 1)
            alpha[t] = after
            before, after = after, before
        m = before[width + 1]
        last_label = before[width] if width > 1 else neg_inf
        nll[n] = -_log_add3(m, last_label, neg_inf, lowest)
    infinite = nll[n] == np.inf
    if zero_infinity and infinite:
        nll[n] = 0
    if not want_grad:
        return
    if steps == 0 or (zero_infinity and infinite):
        grad[:, n, :] = 0
        return
    grad[steps:, n, :] = 0
    if infinite:  # no path: every alpha + beta is -inf, and PyTorch's exp(-inf + inf) is NaN
        grad[:steps, n, :] = np.nan
        return
    loss = nll[n]
    before = np.full(width + 2, neg_inf, dtype)  # two -inf columns behind: s+1, s+2 at s = 2L
    after = np.full(width + 2, neg_inf, dtype)
    share = np.empty(width, dtype)
    collected = np.empty(classes, dtype)
    for t in range(steps - 1, -1, -1):
        lp = log_probs[t, n]
        for s in range(width):
            picked[s] = lp[labels[s]]
        if t == steps - 1:
            after[width - 1] = picked[width - 1]
            if width > 1:
                after[width - 2] = picked[width - 2]
        else:
            _recursion_step(before, after, picked, skip, lowest, -1)
        row = alpha[t]
        for s in range(width):
            share[s] = _vecmath.exp(row[s + 2] + after[s] + loss - picked[s])
        collected[:] = 0
        for s in range(width):
            collected[labels[s]] += share[s]
        out = grad[t, n]
        for c in range(classes):
            out[c] = _vecmath.exp(lp[c]) - collected[c]
        before, after = after, before


def ctc_loss_items(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank,
    zero_infinity,
    want_grad,
    lowest,
    nll,
    grad,
    parts,
):
    """Every item's nll (N,) and unit gradient (T, N, C) (written when want_grad), items in
    prange over `parts` contiguous runs. targets (N, S) int64 padded; lengths (N,) int64."""
    items = log_probs.shape[1]
    for part in prange(parts):
        start, stop = contiguous_run(items, parts, part)
        for n in range(start, stop):
            length = target_lengths[n]
            width = 2 * length + 1
            labels = np.full(width, blank, np.int64)
            skip = np.full(width + 2, -np.inf, log_probs.dtype)
            for k in range(length):
                labels[2 * k + 1] = targets[n, k]
            for s in range(2, width):
                if labels[s] != labels[s - 2]:
                    skip[s] = 0
            _ctc_item(
                log_probs, n, labels, skip, input_lengths[n], zero_infinity, want_grad, lowest, nll, grad
            )


ctc_loss_items = serial_and_parallel(ctc_loss_items, nogil=True, error_model="numpy")


def ctc_loss(
    log_probs: np.ndarray,
    targets: np.ndarray,
    input_lengths: np.ndarray,
    target_lengths: np.ndarray,
    blank: int,
    zero_infinity: bool,
    want_grad: bool,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(nll (N,), unit gradient (T, N, C) or None) of validated (T, N, C) float32/float64
    log-probabilities, (N, S) int64 padded targets and (N,) int64 lengths (the op checks them:
    lengths within T and S, target values in [0, C) and not blank)."""
    steps, items, classes = log_probs.shape
    log_probs = np.ascontiguousarray(log_probs)
    nll = np.empty(items, log_probs.dtype)
    grad = np.empty(log_probs.shape if want_grad else (0, items, classes), log_probs.dtype)
    work = int(steps * (2 * int(target_lengths.max(initial=0)) + 1 + (classes if want_grad else 0)) * items)
    kernel, parts = ctc_loss_items.pick(work * 8, jobs=items)
    lowest = log_probs.dtype.type(np.finfo(log_probs.dtype).min)
    kernel(
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        blank,
        zero_infinity,
        want_grad,
        lowest,
        nll,
        grad,
        parts,
    )
    return nll, (grad if want_grad else None)
