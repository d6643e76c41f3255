"""Sampling from tensors of probabilities: multinomial (indices drawn by weight)."""

from __future__ import annotations

import numpy as np

from numdiff._random import Generator, batched_sample, different_levels, rng
from numdiff.tensor import Tensor


def multinomial(
    input: Tensor, num_samples: int, replacement: bool = False, *, generator: Generator | None = None
) -> Tensor:
    """Indices drawn from the categories of each row of `input` with probability proportional to its
    weights (a 1-D tensor is one row). Without replacement each index appears at most once per row;
    zero-weight categories are drawn only once every positive one has been.

    >>> sorted(numdiff.multinomial(numdiff.tensor([0.0, 10.0, 3.0]), 2).tolist())
    [1, 2]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial: input must be a Tensor, got {type(input).__name__}")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got shape {tuple(input.shape)}")
    if not input.is_floating_point():
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got {input.dtype!r}")
    if not isinstance(num_samples, (int, np.integer)) or num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples (num_samples={num_samples!r})")
    draw = rng(generator)
    levels, _ = different_levels()
    input = _batched_rows(input, levels)
    weights = input.detach().float()._host_values().astype(np.float64).reshape(-1, input.shape[-1])
    categories = weights.shape[1]
    if not replacement and num_samples > categories:
        raise RuntimeError(
            f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement "
            f"(num_samples={num_samples}, {categories} categories)"
        )
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    if np.any(weights.sum(axis=1) <= 0):
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    if replacement:
        # Inverse CDF: a uniform draw scaled to the row's total lands in one category's interval.
        cumulative = np.cumsum(weights, axis=1)
        targets = draw.random((weights.shape[0], num_samples)) * cumulative[:, -1:]
        samples = np.stack([np.searchsorted(c, t, side="right") for c, t in zip(cumulative, targets)])
        samples = np.minimum(samples, categories - 1)
    else:
        # Exponential races: category i finishes at E_i / w_i; the first num_samples to finish are
        # a draw without replacement with probabilities proportional to the weights.
        with np.errstate(divide="ignore"):  # a zero weight never finishes before a positive one
            finish = draw.standard_exponential(weights.shape) / weights
        samples = np.argsort(finish, axis=1, kind="stable")[:, :num_samples]
    samples = samples.astype(np.int64).reshape(tuple(input.shape[:-1]) + (num_samples,))
    out = Tensor._wrap(np.ascontiguousarray(samples), None, None)
    return batched_sample(out if input.device.type == "cpu" else out.to(input.device), levels)


def _batched_rows(input: Tensor, levels: list[int]) -> Tensor:
    """Under vmap, the physical tensor of probabilities: batched at every randomness='different'
    level (one independent draw per entry), in front of the logical rows."""
    if type(input) is Tensor and not levels:
        return input
    from numdiff.func._batched import physical, promote

    present = physical(input)[1]
    if not set(present) <= set(levels):
        raise RuntimeError(
            f"multinomial: under vmap(randomness='same') the probabilities (logical shape "
            f"{tuple(input.shape)}) must not be batched; with batched probabilities each entry draws "
            "its own sample, so use randomness='different' (torch.func refuses this too)"
        )
    return physical(promote(input, levels))[0]
