"""The batching rules of fmod, remainder, tril, triu and linear: vmap runs each op once on the whole
batch (no VmapPerformanceWarning, which a loop over the batch gives) and matches per-example calls."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import numdiff
from numdiff import func
from numdiff.ops.registry import OPS

RNG = np.random.default_rng(11)
X = numdiff.tensor(RNG.uniform(0.5, 3.0, (4, 3, 5)) * RNG.choice([-1.0, 1.0], (4, 3, 5)))
Y = numdiff.tensor(RNG.uniform(0.5, 2.0, (4, 3, 5)) * RNG.choice([-1.0, 1.0], (4, 3, 5)))
W = numdiff.tensor(RNG.standard_normal((2, 5)))
B = numdiff.tensor(RNG.standard_normal(2))

CALLS = {
    "fmod": (lambda x, y: numdiff.fmod(x, y), (X, Y), (0, 0)),
    "remainder-shared-divisor": (lambda x, y: numdiff.remainder(x, y), (X, Y[0]), (0, None)),
    "tril": (lambda x: numdiff.tril(x, 1), (X,), (0,)),
    "triu": (lambda x: numdiff.triu(x, -1), (X,), (0,)),
    # nn.functional.linear calls matmul under vmap; the op itself batches too.
    "linear": (lambda x, w, b: OPS["linear"].apply(x, w, b), (X, W, B), (0, None, None)),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_vmap_runs_the_op_on_the_whole_batch_and_matches_each_example(name):
    fn, args, in_dims = CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", func.VmapPerformanceWarning)
        batched = func.vmap(fn, in_dims=in_dims)(*args)
    for i in range(args[0].shape[0]):
        example = fn(*(a[i] if d == 0 else a for a, d in zip(args, in_dims)))
        np.testing.assert_allclose(batched[i].numpy(), example.numpy(), rtol=1e-13, atol=1e-14)


def test_linear_with_a_batched_weight_matches_each_example():
    weights = numdiff.tensor(RNG.standard_normal((4, 2, 5)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", func.VmapPerformanceWarning)  # this case loops over the batch
        batched = func.vmap(lambda x, w: OPS["linear"].apply(x, w, None), in_dims=(0, 0))(X, weights)
    for i in range(4):
        np.testing.assert_allclose(batched[i].numpy(), X[i].numpy() @ weights[i].numpy().T, rtol=1e-13)
