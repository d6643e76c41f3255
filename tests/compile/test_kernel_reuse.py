"""Fused kernels keyed by what they compute (numdiff/compile/group_kernel.py, program.py): groups
that compute the same thing at the same dtypes share one kernel, whatever their sizes, value
numbers or position in the graph, and a retrace or another program loads it instead of compiling."""

from __future__ import annotations

import numpy as np

import numdiff


def _block(h):
    """One fused group (mul, add, sin, mul), then a product that ends it."""
    return numdiff.sin(h * 1.5 + 0.25) * h


def _kernels(compiled) -> dict:
    """The fused kernels of the latest trace, by name (the dispatchers its driver calls)."""
    *_, trace = [t for traces in compiled.compiled.traces.values() for t in traces]
    return {k: v for k, v in trace.program.forward.__globals__.items() if k.startswith("fused_")}


def _calls(compiled, name: str) -> int:
    source = compiled.compiled.sources[-1]
    return source[source.index("def forward("):].count(f"{name}(")


def test_two_identical_groups_of_one_graph_share_one_compiled_kernel():
    rng = np.random.default_rng(0)
    # Loops of 2048 and 1024 elements: long enough to take their sizes as arguments.
    w1 = numdiff.tensor(rng.standard_normal((1024, 512)))
    w2 = numdiff.tensor(rng.standard_normal((512, 4)))  # the second group runs at another size

    def net(x):
        return _block(_block(x) @ w1) @ w2

    x = numdiff.tensor(rng.standard_normal((2, 1024)))
    compiled = numdiff.compile(net)
    got = compiled(x)
    np.testing.assert_allclose(got.numpy(), net(x).numpy(), rtol=1e-11)  # 1024-term products, summed in another order
    kernels = _kernels(compiled)
    assert len(kernels) == 1, sorted(kernels)
    ((name, kernel),) = kernels.items()
    assert _calls(compiled, name) == 2
    assert len(kernel.signatures) == 1  # compiled (or loaded) once for both groups


def test_a_retrace_at_another_batch_size_reuses_the_kernel():
    compiled = numdiff.compile(lambda x: _block(x).sum())
    rng = np.random.default_rng(1)
    for rows in (3, 11):
        x = numdiff.tensor(rng.standard_normal((rows, 512)))
        np.testing.assert_allclose(compiled(x).item(), _block(x).sum().item(), rtol=1e-13)
    assert compiled.compiled.compile_count == 2
    first, second = [t for traces in compiled.compiled.traces.values() for t in traces]
    assert first.program.kernel_sources == second.program.kernel_sources
    (kernel,) = _kernels(compiled).values()
    assert len(kernel.signatures) == 1


def test_groups_sharing_a_kernel_keep_their_own_stored_values():
    # Both groups store values the backward reads: one buffer per group, though one kernel.
    rng = np.random.default_rng(2)
    w = numdiff.tensor(rng.standard_normal((4, 4)), requires_grad=True)

    def loss(x):
        return (_block(_block(x) @ w) ** 2).sum()

    data = rng.standard_normal((3, 4))
    x = numdiff.tensor(data, requires_grad=True)
    numdiff.compile(loss)(x).backward()
    got = x.grad.numpy().copy(), w.grad.numpy().copy()
    x_eager = numdiff.tensor(data, requires_grad=True)
    w.grad = None
    loss(x_eager).backward()
    np.testing.assert_allclose(got[0], x_eager.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got[1], w.grad.numpy(), rtol=1e-12)


def test_bias_gradient_column_sums_share_a_kernel_across_sizes():
    # The N-d loop of a column sum takes both its sizes as arguments.
    numdiff.manual_seed(0)
    nn = numdiff.nn
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3)).to(numdiff.float64)
    compiled = numdiff.compile(lambda x: model(x).sum())
    rng = np.random.default_rng(3)
    for rows in (2, 7):
        data = rng.standard_normal((rows, 5))
        for p in model.parameters():
            p.grad = None
        compiled(numdiff.tensor(data)).backward()
        got = [p.grad.numpy().copy() for p in model.parameters()]
        for p in model.parameters():
            p.grad = None
        model(numdiff.tensor(data)).sum().backward()
        for a, b in zip(got, [p.grad.numpy() for p in model.parameters()]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    first, second = [t for traces in compiled.compiled.traces.values() for t in traces]
    # The column sums' nests take the batch size as an argument and keep the width (8) a constant;
    # the flat loops of 16 and 56 elements keep their constant sizes (see the test below).
    column_sums = [k for k in first.program.kernel_sources if "for i0 in range(n0):" in k and "for i1 in" in k]
    assert column_sums and set(column_sums) <= set(second.program.kernel_sources)


def test_a_short_loop_keeps_its_constant_size():
    # LLVM vectorises a runtime trip count in chunks of up to 32 elements and runs a shorter loop
    # scalar: a 16-element group is written with its size, a 2048-element one takes it as n0.
    for shape, header in (((2, 8), "for i0 in range(16):"), ((2, 1024), "for i0 in range(n0):")):
        compiled = numdiff.compile(lambda x: _block(x).sum())
        x = numdiff.tensor(np.linspace(-1.0, 1.0, shape[0] * shape[1]).reshape(shape))
        np.testing.assert_allclose(compiled(x).item(), _block(x).sum().item(), rtol=1e-13)
        (trace,) = [t for traces in compiled.compiled.traces.values() for t in traces]
        assert any(header in k for k in trace.program.kernel_sources), trace.program.kernel_sources
