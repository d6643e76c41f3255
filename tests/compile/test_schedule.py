"""numdiff.compile.schedule and the column sums of fusion.py: linear bias adds fused with the
op after them, bias gradients summed inside the loop that computes them, results as eager's."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.compile.fusion import FUSE_MAX_ELEMENTS

TOLERANCE = {numdiff.float64: 1e-12, numdiff.float32: 1e-5}


def _mlp(dtype, in_features=6):
    numdiff.manual_seed(0)
    nn = numdiff.nn
    model = nn.Sequential(nn.Linear(in_features, 8), nn.ReLU(), nn.Linear(8, 7), nn.Tanh(), nn.Linear(7, 3))
    return model.to(dtype=dtype)


def _loss_and_grads(fn, model, x, y):
    for p in model.parameters():
        p.grad = None
    x.grad = None
    loss = fn(x, y)
    loss.backward()
    return [loss.detach().numpy()] + [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("dtype", [numdiff.float64, numdiff.float32])
def test_mlp_fuses_bias_adds_and_bias_gradients_and_matches_eager(dtype):
    model = _mlp(dtype)

    def loss_of(a, b):
        return numdiff.nn.functional.cross_entropy(model(a), b)

    compiled = numdiff.compile(loss_of)
    rng = np.random.default_rng(0)
    y = numdiff.tensor(rng.integers(0, 3, 5))
    x = numdiff.tensor(rng.standard_normal((5, 6)), dtype=dtype, requires_grad=True)
    _loss_and_grads(compiled, model, x, y)  # traced on this draw, replayed on the next
    x = numdiff.tensor(rng.standard_normal((5, 6)), dtype=dtype, requires_grad=True)
    got = _loss_and_grads(compiled, model, x, y)
    want = _loss_and_grads(loss_of, model, x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    (source,) = compiled.compiled.sources
    forward, backward = source.split("def forward(")[1].split("def backward(")
    # The two hidden layers' GEMMs run bias-free, their bias add fused with relu and tanh; the
    # last layer (read by cross_entropy, not fusible) keeps its bias.
    assert forward.count("None, v") == 2 and "Relu_forward" not in forward and "Tanh_forward" not in forward
    # All three bias gradients are summed inside the fused loops of the backward.
    assert "np.add.reduce" not in backward and source.count("] += ") == 3
    # cross_entropy's backward reads the first-order term its forward saved, no second softmax.
    assert "LogSoftmax_forward" not in backward


@pytest.mark.parametrize("dtype", [numdiff.float64, numdiff.float32])
def test_linear_on_a_batch_of_sequences_splits_its_bias_and_matches_eager(dtype):
    # 3-D input: linear has no direct form; the bias-free Linear forward and the fused add run.
    numdiff.manual_seed(1)
    layer = numdiff.nn.Linear(4, 5).to(dtype=dtype)
    x = numdiff.randn(2, 3, 4, dtype=dtype, requires_grad=True)

    def fn(a):
        return (layer(a).relu() * 2.0).sum()

    compiled = numdiff.compile(fn)
    got = _grads_of(compiled, layer, x)
    want = _grads_of(fn, layer, x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    assert "Relu_forward" not in compiled.compiled.sources[0]


def _grads_of(fn, layer, x):
    for t in (x, *layer.parameters()):
        t.grad = None
    out = fn(x)
    out.backward()
    return [out.detach().numpy(), x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in layer.parameters()]


@pytest.mark.parametrize("dims, keepdim", [(0, False), ((0, 1), False), ((0, 1), True), (0, True)])
def test_sums_over_leading_dims_fuse_and_match_numpy(dims, keepdim):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 4, 5))

    def fn(x, y):
        z = x * y + 1.0
        # z is also read by a non-fused op after the sum in trace order: the sum moves up to join z's loop.
        return z.sum(dims, keepdim=keepdim), (z.exp() @ y.transpose(1, 2)).sum()

    compiled = numdiff.compile(fn)
    x = numdiff.tensor(a, requires_grad=True)
    y = numdiff.tensor(b, requires_grad=True)
    column, total = compiled(x, y)
    z = a * b + 1.0
    np.testing.assert_allclose(column.detach().numpy(), z.sum(dims, keepdims=keepdim), rtol=1e-12)
    np.testing.assert_allclose(total.detach().numpy(), (np.exp(z) @ b.transpose(0, 2, 1)).sum(), rtol=1e-12)
    (source,) = compiled.compiled.sources
    assert "] += " in source and "Sum_forward" not in source.split("def forward(")[1].split("def backward(")[0]
    weights = numdiff.tensor(rng.standard_normal(column.shape))
    (column * weights).sum().backward()
    # d/dx sum(z * w) = y * w broadcast over the summed dims (and likewise for y).
    w = weights.numpy() if keepdim else np.expand_dims(weights.numpy(), tuple(range(np.ndim(dims))))
    np.testing.assert_allclose(x.grad.numpy(), b * w, rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), a * w, rtol=1e-12)


def test_float32_column_sums_equal_numpys_reduction_bit_for_bit():
    # No multiply in the summands: fused loops may contract a multiply and an add into one FMA.
    rng = np.random.default_rng(3)
    a = rng.standard_normal((300, 70)).astype(np.float32)
    compiled = numdiff.compile(lambda x: (x - 0.5).relu().sum(0))
    x = numdiff.tensor(a)
    np.testing.assert_array_equal(compiled(x).numpy(), np.add.reduce(np.maximum(a - np.float32(0.5), 0), axis=0))
    assert "] += " in compiled.compiled.sources[0]



@pytest.mark.parametrize("dtype", [numdiff.float64, numdiff.float32])
def test_a_layers_input_and_weight_gradients_run_as_one_pair_and_match_eager(dtype, two_threads):
    # 64 x 256 x 256 = 2**22 multiply-adds each: the smallest products schedule.PAIR_MIN_MACS pairs.
    numdiff.manual_seed(3)
    nn = numdiff.nn
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 4))
    model = model.to(dtype=dtype)

    def loss_of(a, b):
        return numdiff.nn.functional.cross_entropy(model(a), b)

    compiled = numdiff.compile(loss_of)
    rng = np.random.default_rng(4)
    y = numdiff.tensor(rng.integers(0, 4, 64))
    x = numdiff.tensor(rng.standard_normal((64, 256)), dtype=dtype, requires_grad=True)
    got = _loss_and_grads(compiled, model, x, y)
    got = _loss_and_grads(compiled, model, x, y)  # the second call runs the parallel build
    want = _loss_and_grads(loss_of, model, x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    backward = compiled.compiled.sources[0].split("def backward(")[1]
    # Layers 2 and 3 (x needs a gradient too, so layer 1 as well); the head's k = 4 products are small.
    assert backward.count("matmul_pair(") == 2


def test_independent_balanced_products_pair_and_dependent_or_unbalanced_ones_do_not(two_threads):
    rng = np.random.default_rng(5)
    a = numdiff.tensor(rng.standard_normal((256, 256)), requires_grad=True)
    b, b2 = numdiff.tensor(rng.standard_normal((256, 256))), numdiff.tensor(rng.standard_normal((256, 256)))
    c = numdiff.tensor(rng.standard_normal((256, 64)))

    def backward_of(fn):
        compiled = numdiff.compile(fn)
        a.grad = None
        compiled(a).backward()
        return compiled.compiled.sources[0].split("def backward(")[1], a.grad.numpy().copy()

    # The backward's g1 @ b.T and g2 @ b2.T (2**24 multiply-adds each) are independent.
    source, grad = backward_of(lambda a: (a @ b).sum() + (a @ b2).sum())
    assert "matmul_pair(" in source
    np.testing.assert_allclose(grad, np.ones((256, 256)) @ (b.numpy() + b2.numpy()).T, rtol=1e-12)
    # g2 @ c.T has a quarter of the multiply-adds of g1 @ b.T.
    assert "matmul_pair(" not in backward_of(lambda a: (a @ b).sum() + (a @ c).sum())[0]
    # Each backward product reads the one before it.
    assert "matmul_pair(" not in backward_of(lambda a: ((a @ b) @ b2).sum())[0]


def test_one_thread_runs_no_pairs():
    import numba

    previous = numba.get_num_threads()
    numdiff.set_num_threads(1)
    try:
        a = numdiff.tensor(np.ones((256, 256)), requires_grad=True)
        f = numdiff.compile(lambda a: (a @ a).sum())
        f(a).backward()
    finally:
        numdiff.set_num_threads(previous)
    assert "matmul_pair(" not in f.compiled.sources[0]
    np.testing.assert_allclose(a.grad.numpy(), np.full((256, 256), 512.0))


def test_one_element_calls_of_inputs_move_ahead_and_casts_fuse():
    from numdiff.compile import schedule

    scale = numdiff.tensor(0.75, dtype=numdiff.float32)

    def widened(x):
        return (x.to(numdiff.float64) * numdiff.sin(x).to(numdiff.float64) * scale.to(numdiff.float64)).sum()

    x = numdiff.tensor(np.linspace(-1, 1, 24), dtype=numdiff.float32, requires_grad=True)
    compiled = numdiff.compile(widened)
    out = compiled(x)
    eager = widened(x.detach())
    np.testing.assert_allclose(out.item(), eager.item(), rtol=1e-6)  # float32 sin: _vecmath against NumPy
    trace = next(iter(compiled.compiled.traces.values()))[0]
    graph = trace.program.graph
    calls = schedule.hoist_scalars(graph.calls, graph.values)
    first = calls[0]
    assert first.op_name == "to_dtype" and graph.values[first.output].shape == ()
    forward = trace.program.source.split("def forward(")[1].split("def backward(")[0]
    assert forward.count("ToDtype_forward") == 1  # the scalar's cast alone; the full-size ones fuse


def test_products_that_only_view_ops_separate_pair_whatever_the_view(two_threads):
    # A view op between two products (its spec's `view`: here getitem, which the old name list
    # left out) moves ahead of the pair; a non-view op between them keeps them apart.
    rng = np.random.default_rng(6)
    a = numdiff.tensor(rng.standard_normal((256, 256)))
    b, b2 = numdiff.tensor(rng.standard_normal((256, 256))), numdiff.tensor(rng.standard_normal((128, 256)))

    def forward_of(fn):
        compiled = numdiff.compile(fn)
        out = compiled(a)
        return compiled.compiled.sources[0].split("def backward(")[0], [o.numpy() for o in out]

    source, out = forward_of(lambda a: (a @ b, a[:, :128] @ b2))
    assert "matmul_pair(" in source
    # Bounded by the sums' terms, not each result: numdiff's GEMM loops (numdiff.kernels._gemm_route)
    # add in another order than NumPy's OpenBLAS, and an element can cancel to near 0.
    for got, want in zip(out, (a.numpy() @ b.numpy(), a.numpy()[:, :128] @ b2.numpy())):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13 * np.abs(want).max())
    assert "matmul_pair(" not in forward_of(lambda a: (a @ b, (a * 2.0) @ b)[0])


@pytest.mark.parametrize("activation", ["gelu", "tanh", "sigmoid", "silu"])
@pytest.mark.parametrize("rows", [3, 40])
def test_a_large_linear_read_by_a_transcendental_keeps_its_bias_in_the_gemm(activation, rows):
    # 40 x 7 rows of 64 features (17920 elements, above fusion.FUSE_MAX_ELEMENTS): the split-off add
    # could not fuse with the activation (a large group with one runs fused only when flat, and the bias
    # broadcasts), so it ran as an Add op on a fresh array; eager adds the bias in place. 3 x 7 x 64 fuses.
    numdiff.manual_seed(2)
    layer = numdiff.nn.Linear(16, 64).to(dtype=numdiff.float32)
    x = numdiff.randn(rows, 7, 16, dtype=numdiff.float32, requires_grad=True)

    def fn(a):
        return getattr(numdiff.nn.functional, activation)(layer(a)).sum()

    compiled = numdiff.compile(fn)
    got = [_grads_of(compiled, layer, x) for _ in range(2)][1]
    want = _grads_of(fn, layer, x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    forward = "".join(s.split("def forward(")[1].split("def backward(")[0] for s in compiled.compiled.sources if s)
    large = rows * 7 * 64 > FUSE_MAX_ELEMENTS
    assert ("Add_forward" in forward) is False
    assert ("None)" in forward) is not large  # the bias-free GEMM only where the add fuses
