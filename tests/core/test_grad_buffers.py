"""The engine's one gradient buffer per input for getitem's pieces (numdiff.autograd._grad_buffers):
split, chunk, unbind, narrow and indexing write their gradients into one array of the input."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import numdiff


def _pieces_backward_peak(x: numdiff.Tensor, pieces: tuple, grads: list) -> int:
    tracemalloc.start()
    try:
        numdiff.autograd.backward(list(pieces), grads)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_split_backward_writes_one_buffer_not_one_per_piece():
    x = numdiff.zeros(300_000, dtype=numdiff.float64, requires_grad=True)
    pieces = x.split(100_000)
    grads = [numdiff.full((100_000,), float(i + 1), dtype=numdiff.float64) for i in range(3)]
    peak = _pieces_backward_peak(x, pieces, grads)
    # One (300_000,) float64 gradient is 2.4 MB; a zero array per piece and their sums held three.
    assert peak < 1.5 * x.numel() * 8, peak
    np.testing.assert_array_equal(x.grad.numpy(), np.repeat([1.0, 2.0, 3.0], 100_000))


@pytest.mark.parametrize(
    "cut",
    [
        lambda t: t.split(2, dim=1),
        lambda t: t.split([1, 3, 1], dim=1),
        lambda t: t.chunk(3, dim=0),
        lambda t: t.unbind(2),
        lambda t: (t.narrow(1, 1, 3), t.narrow(1, 0, 2)),  # overlapping pieces add up
        lambda t: (t[:, ::2], t[1:, 1::2], t[..., None, 0]),
        lambda t: (t[np.array([0, 0, 2])], t[:, np.array([4, 4])]),  # repeated advanced indices
        lambda t: (t[t > 0], t[0]),
    ],
)
def test_pieces_gradients_match_torch(cut):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((3, 5, 4))
    results = []
    for lib in (numdiff, torch):
        x = lib.tensor(x_np, requires_grad=True)
        h = x * 2.0  # a non-leaf: the pieces' buffer is an intermediate's
        pieces = cut(h)
        loss = sum(((p * (i + 1.5)) ** 2).sum() for i, p in enumerate(pieces)) + h.sum()
        loss.backward()
        results.append(x.grad.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12, atol=1e-12)


def test_a_gradient_the_add_hands_to_two_inputs_is_not_written_in_place():
    # add's backward hands one gradient tensor to both inputs; the pieces of h must not add into
    # it in place, or c's gradient changes too.
    x = numdiff.ones(2, 4, requires_grad=True)
    c = numdiff.ones(2, 4, requires_grad=True)
    h = x * 3.0
    out = (h + c).sum() + sum(p.sum() * 10.0 for p in h.split(2, dim=1))
    out.backward()
    np.testing.assert_array_equal(c.grad.numpy(), np.ones((2, 4)))
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 4), 33.0))


def test_node_post_hooks_still_see_each_pieces_gradient():
    x = numdiff.ones(2, 4, requires_grad=True)
    a, b = x.split(2, dim=1)
    seen = []
    a.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(grad_inputs[0].shape))
    (a.sum() + 2 * b.sum()).backward()
    assert seen == [numdiff.Size([2, 4])]
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 1, 2, 2], [1, 1, 2, 2]])


def test_create_graph_keeps_the_recorded_backward():
    x = numdiff.tensor([1.0, 2.0, 3.0, 4.0], dtype=numdiff.float64, requires_grad=True)
    a, b = x.split(2)
    (g,) = numdiff.autograd.grad((a**3).sum() + (b**2).sum(), x, create_graph=True)
    assert g.requires_grad
    (gg,) = numdiff.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [6.0, 12.0, 2.0, 2.0])



def test_fan_in_sums_in_place_without_touching_a_gradient_a_hook_kept():
    # a's gradient passes through add's backward unchanged into h's buffer; the hook holds it, so
    # the engine must sum h's other contributions into a new array, not into the one the hook kept.
    x = numdiff.ones(3, 2, dtype=numdiff.float64, requires_grad=True)
    h = x * 1.0
    kept = []
    a = h + 1.0
    a.register_hook(kept.append)
    loss = a.sum() + (h * 2.0).sum() + (h * 3.0).sum() + h.exp().sum()
    loss.backward()
    np.testing.assert_array_equal(kept[0].numpy(), np.ones((3, 2)))
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 2), 6.0 + np.e))


@pytest.mark.parametrize("seed", range(3))
def test_random_fan_in_graphs_match_torch(seed):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    x_np = rng.standard_normal((4, 6))
    plan = rng.integers(0, 4, 12)
    results = []
    for lib in (numdiff, torch):
        x = lib.tensor(x_np, requires_grad=True)
        values = [x * 1.5]
        for step in plan:
            source = values[int(step) % len(values)]
            values.append([source.sin(), source * 2.0, source + values[0], source.split(3, 1)[0].repeat(1, 2)][step])
        sum(v.sum() for v in values).backward()
        results.append(x.grad.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12, atol=1e-12)
