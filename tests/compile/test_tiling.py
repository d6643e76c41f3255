"""Large elementwise groups with transcendental calls (numdiff/compile/tiling.py) and the
forward-mode derivatives of float32 chains (numdiff/compile/backward.py `_fold_chains`): results
as eager's, on both threads counts' code paths, with the sin/cos range guard."""

from __future__ import annotations

import re

import numpy as np
import pytest

import numdiff
from numdiff.compile import fusion, tiling

TOLERANCE = {numdiff.float64: 1e-12, numdiff.float32: 2e-6}
LARGE = fusion.FUSE_MAX_ELEMENTS + 2 * tiling.TILE + 37  # tiles, and a last partial one


def _chain(x):
    y = numdiff.exp(numdiff.sin(x) * 0.5) + 0.25
    y = numdiff.tanh(numdiff.cos(y) * 1.5) - numdiff.log1p(y * y)
    return y * numdiff.sin(y) + 2.0


def _run_both(fn, data, dtype):
    x = numdiff.tensor(data, dtype=dtype, requires_grad=True)
    compiled = numdiff.compile(fn)
    out = compiled(x)
    out.sum().backward()
    x_eager = numdiff.tensor(data, dtype=dtype, requires_grad=True)
    expected = fn(x_eager)
    expected.sum().backward()
    return compiled, out, x.grad, expected, x_eager.grad


def _close(got, expected, dtype):
    got, expected = got.detach().numpy().astype(np.float64), expected.detach().numpy().astype(np.float64)
    scale = np.maximum(np.abs(expected), 1.0)
    assert np.max(np.abs(got - expected) / scale) <= TOLERANCE[dtype]


@pytest.mark.parametrize("dtype", [numdiff.float64, numdiff.float32])
def test_a_large_group_runs_tiled_in_stages_and_matches_eager(dtype):
    data = np.random.default_rng(0).uniform(-3, 3, LARGE)
    compiled, out, grad, expected, expected_grad = _run_both(_chain, data, dtype)
    _close(out, expected, dtype)
    _close(grad, expected_grad, dtype)
    source = compiled.compiled.sources[0]
    assert "prange(" in source and "def stage_" in source


def _repeated(x):
    for _ in range(6):
        x = numdiff.exp(numdiff.sin(x) * 0.9) + 0.1
    return x


def test_repeated_steps_share_one_stage_function():
    data = np.random.default_rng(1).standard_normal(LARGE)
    compiled, out, grad, expected, expected_grad = _run_both(_repeated, data, numdiff.float64)
    _close(out, expected, numdiff.float64)
    _close(grad, expected_grad, numdiff.float64)
    source = compiled.compiled.sources[0]
    assert source.count("def stage_") < source.count("    stage_")


def test_a_float32_chain_keeps_sin_and_exp_in_loops_of_their_own_width():
    # A float32 sin computes in float64 lanes and a float32 exp in float32 ones: each step runs as
    # two loops, the sin's taking the float64 derivative factor of the step before.
    data = np.random.default_rng(4).standard_normal(LARGE)
    compiled, out, grad, expected, expected_grad = _run_both(_repeated, data, numdiff.float32)
    # Six steps of float32 leave eager's own gradient 2.7e-6 from the float64 one (the compiled
    # gradient: 2.2e-6), so the float32 agreement, 1e-5, not TOLERANCE.
    for got, want in ((out, expected), (grad, expected_grad)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    source = compiled.compiled.sources[0]
    stages = [part.split("\n\n\n")[0] for part in source.split("def stage_")[1:]]
    assert stages and not any("_vecmath.sin(" in s and "_vecmath.exp(" in s for s in stages)
    assert any("_vecmath.cos(" in s and "np.float64(" in s for s in stages)
    assert source.count("        stage_") == 2 * 6 + 1  # two loops a step, the last derivative's


@pytest.mark.parametrize("dtype", [numdiff.float64, numdiff.float32])
def test_sin_beyond_the_fast_range_is_the_c_librarys(dtype):
    data = np.random.default_rng(2).uniform(-3, 3, LARGE)
    data[LARGE // 2] = 1e6  # beyond _vecmath.SIN_COS_LIMIT: the stage reruns with the C library
    data[-1] = -3.5e5
    compiled, out, grad, expected, expected_grad = _run_both(lambda x: numdiff.cos(x) * numdiff.sin(x) + x, data, dtype)
    _close(out, expected, dtype)
    _close(grad, expected_grad, dtype)


def test_nan_and_inf_pass_through_a_tiled_group():
    data = np.random.default_rng(3).uniform(-3, 3, LARGE)
    data[[5, 1000, LARGE - 1]] = [np.nan, np.inf, -np.inf]
    x = numdiff.tensor(data, requires_grad=True)
    got = numdiff.compile(lambda t: numdiff.exp(numdiff.sin(t)) * numdiff.cos(t))(x)
    expected = numdiff.exp(numdiff.sin(x)) * numdiff.cos(x)
    got, expected = got.detach(), expected.detach()
    np.testing.assert_array_equal(np.isnan(got.numpy()), np.isnan(expected.numpy()))
    finite = np.isfinite(expected.numpy())
    np.testing.assert_allclose(got.numpy()[finite], expected.numpy()[finite], rtol=1e-13)


def _backward_source(compiled):
    source = compiled.compiled.sources[0]
    return source[source.index("def backward("):]


@pytest.mark.parametrize("size", [16, LARGE])
def test_a_float32_chain_saves_one_derivative_array(size):
    def chain(x):
        for _ in range(5):
            x = numdiff.exp(numdiff.sin(x) * 0.9) + 0.1
        return x.sum()

    data = np.random.default_rng(4).standard_normal(size)
    x = numdiff.tensor(data, dtype=numdiff.float32, requires_grad=True)
    compiled = numdiff.compile(chain)
    compiled(x).backward()
    trace = next(iter(compiled.compiled.traces.values()))[0]
    assert len(trace.program.saved) == 1
    assert trace.program.graph.values[trace.program.saved[0]].dtype == np.float64
    reference = numdiff.tensor(data, dtype=numdiff.float64, requires_grad=True)
    chain(reference).backward()
    eager = numdiff.tensor(data, dtype=numdiff.float32, requires_grad=True)
    chain(eager).backward()
    # The forward-mode product is at least as close to the float64 gradient as the eager one.
    exact = reference.grad.numpy()
    ours = np.abs(x.grad.numpy() - exact) / np.abs(exact)
    theirs = np.abs(eager.grad.numpy() - exact) / np.abs(exact)
    assert np.median(ours) <= np.median(theirs) * 1.5 and ours.max() < 1e-3


def test_a_float64_chain_keeps_reverse_mode():
    def chain(x):
        return (numdiff.exp(numdiff.sin(x) * 0.9) + 0.1).sum()

    x = numdiff.tensor(np.linspace(-2, 2, 16), requires_grad=True)
    compiled = numdiff.compile(chain)
    compiled(x).backward()
    trace = next(iter(compiled.compiled.traces.values()))[0]
    assert len(trace.program.saved) > 1


def _assert_float32_grads_match(fn, data):
    """fn's float32 gradient at data, compiled and eager, to float32 agreement."""
    x = numdiff.tensor(data, dtype=numdiff.float32, requires_grad=True)
    numdiff.compile(fn)(x).backward()
    eager = numdiff.tensor(data, dtype=numdiff.float32, requires_grad=True)
    fn(eager).backward()
    np.testing.assert_allclose(x.grad.numpy(), eager.grad.numpy(), rtol=2e-6, atol=1e-7)


def test_a_link_read_twice_ends_the_chain_and_gradients_stay_right():
    def branched(x):
        y = numdiff.sin(x) * 0.5
        z = numdiff.exp(y) + 1.0  # y is read twice: z's chain cannot take y's links
        return (numdiff.tanh(z) * 2.0 + y).sum()

    data = np.random.default_rng(5).standard_normal(64)
    _assert_float32_grads_match(branched, data)


def test_a_chain_with_a_tensor_operand_that_needs_no_grad():
    w = numdiff.tensor(np.linspace(0.5, 1.5, 32), dtype=numdiff.float32)

    def scaled(x):
        return (numdiff.sigmoid(numdiff.sin(x) * w) * w).sum()

    data = np.random.default_rng(6).standard_normal(32)
    _assert_float32_grads_match(scaled, data)


def test_leaf_grad_accumulates_through_a_folded_chain():
    def chain(x):
        return (numdiff.exp(numdiff.cos(x) * 0.5) * 3.0).sum()

    data = np.random.default_rng(7).standard_normal(32)
    x = numdiff.tensor(data, dtype=numdiff.float32, requires_grad=True)
    compiled = numdiff.compile(chain)
    compiled(x).backward()
    once = x.grad.numpy().copy()
    compiled(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * once, rtol=1e-6)


@pytest.mark.parametrize("size", [16, LARGE])
def test_a_float32_chain_multiplies_unrounded_cos_into_its_derivative(size):
    # The derivative factor of sin is cos(x), taken in float64 (never float32's rounded cos), and the
    # gradient agrees with eager; past the fast range (x[1] = 1e6) the loop reruns with the C library.
    def chain(x):
        return _repeated(x).sum()

    data = np.random.default_rng(12).standard_normal(size)
    for far in (False, True):
        if far:
            data[1] = 1e6
        x = numdiff.tensor(data, dtype=numdiff.float32, requires_grad=True)
        compiled = numdiff.compile(chain)
        compiled(x).backward()
        source = compiled.compiled.sources[0]
        # The factor is never float32's rounded cos: sin's backward rule takes its operands in the
        # float64 product's dtype, so cos runs on x's float64 value (before that rule, the float32
        # cos's unrounded value, _vecmath.cos_wide).
        assert "np.float32(_vecmath.cos(" not in source
        assert "_vecmath.cos_wide(" in source or re.search(r"\* _vecmath\.cos\([tu]\d+\)", source)
        eager = numdiff.tensor(data, dtype=numdiff.float32, requires_grad=True)
        chain(eager).backward()
        # Eager's sin and exp are NumPy's ufuncs, whose float32 results can differ from _vecmath's
        # by an ulp or two; where a cos(x) factor is near zero, that moves the product by far more
        # than its rounding, so the absolute tolerance is relative to the largest gradient.
        expected = eager.grad.numpy()
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_one_tiled_kernel_serves_a_computation_at_every_size():
    # The size is the kernel's argument, not a constant in its text: two blocks of different sizes
    # running the same chain share one kernel (one parallel compile, one file on disk); each output
    # keeps eager's values, the rows of the packed buffer at their own runtime offsets included.
    def two_blocks(a, b):
        outputs = []
        for x in (a, b):
            y = numdiff.exp(numdiff.sin(x) * 0.5)
            outputs += [y * numdiff.cos(x), y + 1.0]
        return outputs

    rng = np.random.default_rng(8)
    small, large = rng.uniform(-3, 3, LARGE), rng.uniform(-3, 3, 3 * LARGE + 5)
    compiled = numdiff.compile(two_blocks)
    got = compiled(numdiff.tensor(small), numdiff.tensor(large))
    expected = two_blocks(numdiff.tensor(small), numdiff.tensor(large))
    for g, e in zip(got, expected, strict=True):
        _close(g, e, numdiff.float64)
    source = compiled.compiled.sources[0]
    tiled = [part for part in source.split("\ndef fused_")[1:] if "prange(" in part]
    assert len(tiled) == 1 and "1 * n0 + lo" in tiled[0]
    assert str(LARGE) not in source.split("def forward(")[0]
