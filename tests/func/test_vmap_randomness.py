"""vmap's randomness modes for the random ops: 'error', 'different' (a draw per batch entry) and
'same' (one draw for the batch), each vmap level with its own, as torch.func.

Under 'different' a random op draws its batch's samples in one call, in front of the logical
shape, so with a fixed seed it gives exactly what the same op with the batch size prepended gives
outside vmap; under 'same' it gives what the op gives outside vmap.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff import func

BATCH = 4
F64 = numdiff.float64

# op name -> a function of one (logical shape (3,)) batched input that draws with that op.
RANDOM_OPS = {
    "rand": lambda x: x + numdiff.rand(3, dtype=F64),
    "randn": lambda x: x + numdiff.randn(3, dtype=F64),
    "rand_like": lambda x: x + numdiff.rand_like(x),
    "randn_like": lambda x: x + numdiff.randn_like(x),
    "randint": lambda x: x + numdiff.randint(0, 1000, (3,)).to(F64),
    "randperm": lambda x: x + numdiff.randperm(3).to(F64),
    "dropout": lambda x: numdiff.nn.functional.dropout(x + 1.0, 0.5),
    "uniform_": lambda x: x.clone().uniform_(),
    "normal_": lambda x: x.clone().normal_(),
    "multinomial": lambda x: x + numdiff.multinomial(numdiff.ones(1000, dtype=F64), 3).to(F64),
}

# The same draws made outside vmap, for a leading batch of `n` (None: no batch).
UNBATCHED = {
    "rand": lambda n: numdiff.rand(*_lead(n), 3, dtype=F64),
    "randn": lambda n: numdiff.randn(*_lead(n), 3, dtype=F64),
    "rand_like": lambda n: numdiff.rand(*_lead(n), 3, dtype=F64),
    "randn_like": lambda n: numdiff.randn(*_lead(n), 3, dtype=F64),
    "randint": lambda n: numdiff.randint(0, 1000, (*_lead(n), 3)).to(F64),
    "randperm": None,  # a batch of permutations is drawn differently from one permutation
    "dropout": lambda n: (numdiff.rand(*_lead(n), 3, dtype=F64) >= 0.5).to(F64) * 2.0,
    "uniform_": lambda n: numdiff.rand(*_lead(n), 3, dtype=F64),
    "normal_": lambda n: numdiff.randn(*_lead(n), 3, dtype=F64),
    "multinomial": None,
}


def _lead(n):
    return () if n is None else (n,)


@pytest.mark.parametrize("name", sorted(RANDOM_OPS))
def test_randomness_error_raises_and_names_the_other_modes(name):
    with pytest.raises(func.VmapRandomnessError, match="'different'.*'same'"):
        func.vmap(RANDOM_OPS[name])(numdiff.zeros(BATCH, 3, dtype=F64))


@pytest.mark.parametrize("name", sorted(RANDOM_OPS))
def test_randomness_same_draws_once_for_the_batch(name):
    numdiff.manual_seed(11)
    out = func.vmap(RANDOM_OPS[name], randomness="same")(numdiff.zeros(BATCH, 3, dtype=F64)).numpy()
    assert out.shape == (BATCH, 3)
    for row in out[1:]:
        np.testing.assert_array_equal(row, out[0])
    if UNBATCHED[name] is not None:
        numdiff.manual_seed(11)
        np.testing.assert_array_equal(out[0], UNBATCHED[name](None).numpy())


@pytest.mark.parametrize("name", sorted(RANDOM_OPS))
def test_randomness_different_draws_per_batch_entry(name):
    numdiff.manual_seed(12)
    out = func.vmap(RANDOM_OPS[name], randomness="different")(numdiff.zeros(BATCH, 3, dtype=F64)).numpy()
    assert out.shape == (BATCH, 3)
    assert len({tuple(row) for row in out}) > 1, "every batch entry drew the same sample"
    if UNBATCHED[name] is not None:
        numdiff.manual_seed(12)
        np.testing.assert_array_equal(out, UNBATCHED[name](BATCH).numpy())
    if name == "randperm":
        assert all(sorted(row) == [0.0, 1.0, 2.0] for row in out)


def test_nested_vmaps_keep_their_own_randomness():
    draw = lambda x: x + numdiff.rand((), dtype=F64)  # noqa: E731
    zeros = numdiff.zeros(3, 5, dtype=F64)
    inner_different = func.vmap(func.vmap(draw, randomness="different"), randomness="same")(zeros).numpy()
    np.testing.assert_array_equal(inner_different[1], inner_different[0])
    assert len(set(inner_different[0])) == 5
    outer_different = func.vmap(func.vmap(draw, randomness="same"), randomness="different")(zeros).numpy()
    assert all(len(set(row)) == 1 for row in outer_different)
    assert len(set(outer_different[:, 0])) == 3
    both = func.vmap(func.vmap(draw, randomness="different"), randomness="different")(zeros).numpy()
    assert len(set(both.ravel())) == 15
    for inner, outer in (("same", "error"), ("error", "same")):
        with pytest.raises(func.VmapRandomnessError):
            func.vmap(func.vmap(draw, randomness=inner), randomness=outer)(zeros)


def test_multinomial_with_batched_probabilities():
    rows = numdiff.tensor(np.eye(4)[[2, 0, 3]])  # one category with weight: the draw is certain
    picked = func.vmap(lambda p: numdiff.multinomial(p, 1), randomness="different")(rows)
    assert picked.numpy().tolist() == [[2], [0], [3]]
    with pytest.raises(RuntimeError, match=r"multinomial: under vmap\(randomness='same'\) the probabilities"):
        func.vmap(lambda p: numdiff.multinomial(p, 1), randomness="same")(rows)


def test_per_sample_noise_inside_grad_is_the_unbatched_draw():
    numdiff.manual_seed(5)
    grads = func.vmap(func.grad(lambda x: (x * numdiff.randn(3, dtype=F64)).sum()), randomness="different")(
        numdiff.zeros(BATCH, 3, dtype=F64)
    )
    numdiff.manual_seed(5)
    np.testing.assert_array_equal(grads.numpy(), numdiff.randn(BATCH, 3, dtype=F64).numpy())


def test_unknown_randomness_lists_the_modes():
    with pytest.raises(ValueError, match=r"\('error', 'different', 'same'\), got 'random'"):
        func.vmap(lambda x: x, randomness="random")


def test_same_with_chunk_size_shares_one_draw_across_the_chunks():
    # Each chunk drew afresh, so randomness='same' with chunk_size gave one draw per chunk, not
    # one for the batch (torch.func gives the unchunked result); the generator then advanced once.
    def draw(x):
        return x + numdiff.rand(3, dtype=F64) + numdiff.nn.functional.dropout(numdiff.ones(3, dtype=F64), 0.5)

    x = numdiff.zeros(5, 3, dtype=F64)
    numdiff.manual_seed(0)
    chunked = func.vmap(draw, randomness="same", chunk_size=2)(x)
    after_chunked = numdiff.rand(2)
    numdiff.manual_seed(0)
    whole = func.vmap(draw, randomness="same")(x)
    np.testing.assert_array_equal(chunked.numpy(), whole.numpy())
    np.testing.assert_array_equal(after_chunked.numpy(), numdiff.rand(2).numpy())
    own = numdiff.Generator().manual_seed(3)
    rows = func.vmap(lambda r: r + numdiff.rand(3, generator=own, dtype=F64), randomness="same", chunk_size=1)(x)
    np.testing.assert_array_equal(rows.numpy(), np.broadcast_to(rows.numpy()[0], (5, 3)))
