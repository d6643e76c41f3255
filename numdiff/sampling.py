"""Sampling from tensors of parameters: multinomial (indices drawn by weight), bernoulli (0/1 draws
with per-element probabilities) and normal (per-element or shared mean and standard deviation).

bernoulli and normal return constants: PyTorch records them with a zero gradient for their
parameters, which a constant gives too.
"""

from __future__ import annotations

import numpy as np

from numdiff._batched import physical, promote
from numdiff._host_functions import random_function
from numdiff._random import Generator, batched_sample, different_levels, rng
from numdiff.backend import holds_values
from numdiff.creation import rand, randn
from numdiff.ops._util import broadcast_shape
from numdiff.tensor import Tensor


@random_function
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
    if not holds_values(input._data):  # a meta tensor: the samples' shape, nothing drawn
        if not replacement and num_samples > input.shape[-1]:
            raise RuntimeError(f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples without "
                               f"replacement (num_samples={num_samples}, {input.shape[-1]} categories)")
        shape = (*input.shape[:-1], int(num_samples))
        return Tensor._wrap(np.empty(shape, np.int64, like=input._data), None, None)
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

    present = physical(input)[1]
    if not set(present) <= set(levels):
        raise RuntimeError(
            f"multinomial: under vmap(randomness='same') the probabilities (logical shape "
            f"{tuple(input.shape)}) must not be batched; with batched probabilities each entry draws "
            "its own sample, so use randomness='different' (torch.func refuses this too)"
        )
    return physical(promote(input, levels))[0]


def bernoulli(input: Tensor, p: float | None = None, *, generator: Generator | None = None) -> Tensor:
    """1 with probability `input` (or `p`, for every element), else 0; `input`'s dtype and shape.

    >>> numdiff.bernoulli(numdiff.tensor([0.0, 1.0])).tolist()
    [0.0, 1.0]
    """
    if not isinstance(input, Tensor) or not input.is_floating_point():
        shown = f"dtype {input.dtype!r}" if isinstance(input, Tensor) else type(input).__name__
        raise TypeError(f"bernoulli: expected a floating point tensor of probabilities, got {shown}")
    if p is not None:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"bernoulli: p must be a number in [0, 1], got {p!r}")
        probabilities: Tensor | float = float(p)
    else:
        probabilities = input.detach()
        values = probabilities._host_values() if holds_values(input._data) else np.zeros(0)  # meta: no values
        if values.size and not ((values >= 0) & (values <= 1)).all():
            raise ValueError("bernoulli: every probability must lie in [0, 1], got values outside it (or NaN)")
    uniform = rand(*input.shape, generator=generator, dtype=input.dtype, device=input.device)
    return (uniform < probabilities).to(input.dtype)


def normal(
    mean: Tensor | float = 0.0,
    std: Tensor | float = 1.0,
    size: tuple | None = None,
    *,
    generator: Generator | None = None,
    dtype: object = None,
    device: object = None,
    requires_grad: bool = False,
) -> Tensor:
    """Normal samples with the given means and standard deviations (tensors broadcast together, or
    numbers with a `size`), as PyTorch's four forms of torch.normal.

    >>> numdiff.normal(2.0, 0.0, (3,)).tolist()
    [2.0, 2.0, 2.0]
    """
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    for name, value in (("mean", mean), ("std", std)):
        if not isinstance(value, Tensor) and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise TypeError(f"normal: {name} must be a Tensor or a number, got {type(value).__name__}")
    if not tensors:
        if size is None:
            raise TypeError("normal: with a number mean and std, give the size of the sample")
        if std < 0:
            raise ValueError(f"normal: std must be at least 0, got {std}")
        noise = randn(*size, generator=generator, dtype=dtype, device=device)
        out = noise * float(std) + float(mean)
        return out.requires_grad_() if requires_grad else out
    if size is not None:
        raise TypeError("normal: size is only taken with a number mean and std")
    like = tensors[0]
    shape = tuple(like.shape) if len(tensors) == 1 else broadcast_shape("normal", tensors[0].shape, tensors[1].shape)
    if isinstance(std, Tensor) and std.numel() and (std.detach()._host_values() < 0).any():
        raise ValueError("normal: every std must be at least 0")
    if isinstance(std, (int, float)) and std < 0:
        raise ValueError(f"normal: std must be at least 0, got {std}")
    noise = randn(*shape, generator=generator, dtype=like.dtype, device=like.device)
    mean = mean.detach() if isinstance(mean, Tensor) else mean
    std = std.detach() if isinstance(std, Tensor) else std
    return noise * std + mean
