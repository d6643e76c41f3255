"""An elementwise node's backward above SMALL elements with every operand C-contiguous in the
gradient's shape calls the flat loop directly (numdiff/kernels/_elementwise_contiguous.py): the same
loop as the general path, so the same bits, and the general path wherever an operand is laid out
otherwise."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import numdiff
from numdiff._ground.scalar_rules import RULES
from numdiff.kernels import elementwise
from numdiff.kernels._elementwise_contiguous import contiguous_backward

torch = pytest.importorskip("torch")
F = numdiff.nn.functional

SHAPE = (24, 40)  # 960 elements: above SMALL, below GRAIN


def _operands(rule, dtype, rng):
    inputs = {name: rng.uniform(0.2, 0.9, SHAPE).astype(dtype) for name in rule.inputs}
    attrs = tuple(default for _, default in rule.attrs)
    out = elementwise.forward(rule, tuple(inputs.values()), attrs, SHAPE, np.dtype(dtype))
    values = {"g": rng.standard_normal(SHAPE).astype(dtype), "out": out, **inputs}
    return values, attrs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_rule_gives_the_general_paths_bits(dtype):
    rng = np.random.default_rng(11)
    checked = 0
    for rule in RULES.values():
        for count in range(1, rule.arity + 1):
            for needed in itertools.combinations(range(rule.arity), count):
                run = contiguous_backward(rule, needed)
                if run is None:  # a NumPy-expression backward: the general path at every size
                    continue
                with np.errstate(all="ignore"):  # acosh of numbers below 1, say: NaN on both paths
                    values, attrs = _operands(rule, dtype, rng)
                    expected = elementwise.backward(rule, needed, values, attrs)
                    got = run(values["g"], [values[name] for name in rule.saved], attrs)
                assert len(got) == len(expected), rule.name
                for a, b in zip(got, expected):
                    assert a.dtype == b.dtype and a.shape == b.shape, rule.name
                    np.testing.assert_array_equal(a, b, err_msg=f"{rule.name} {needed}")
                checked += 1
    assert checked > 50


def test_an_operand_not_laid_out_contiguous_is_left_to_the_general_path():
    rule = RULES["mul"]
    run = contiguous_backward(rule, (0,))
    g = np.ones(SHAPE)
    assert run(g, [None, np.ones(SHAPE[::-1]).T], ()) is None  # transposed
    assert run(g, [None, np.ones(SHAPE[1])], ()) is None  # broadcast
    assert run(g, [None, np.ones((SHAPE[0], 2 * SHAPE[1]))[:, ::2]], ()) is None  # strided
    assert run(g, [None, np.ones(SHAPE)], ()) is not None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["relu", "leaky_relu", "sigmoid", "mul", "softplus"])
def test_mid_sized_gradients_match_torch_with_contiguous_and_transposed_gradients(name, dtype):
    rng = np.random.default_rng(12)
    a = rng.standard_normal(SHAPE).astype(dtype)
    b = rng.standard_normal(SHAPE).astype(dtype)
    g = rng.standard_normal(SHAPE[::-1]).astype(dtype)

    def run(lib):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        calls = {
            "relu": lambda: lib.relu(x),
            "leaky_relu": lambda: lib.nn.functional.leaky_relu(x, 0.3),
            "sigmoid": lambda: lib.sigmoid(x),
            "mul": lambda: x * y,
            "softplus": lambda: lib.nn.functional.softplus(x, beta=2.0),
        }
        out = calls[name]()
        grads = []
        for seed in (lib.tensor(g.T.copy()), lib.tensor(g).T):  # C-contiguous, then transposed
            x.grad = y.grad = None
            out.backward(seed, retain_graph=True)
            grads.append([t.grad.numpy().copy() if t.grad is not None else None for t in (x, y)])
        return grads

    tol = dict(rtol=1e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    ours, theirs = run(numdiff), run(torch)
    for mine, reference in zip(ours, theirs):
        for m, r in zip(mine, reference):
            assert (m is None) == (r is None)
            if m is not None:
                np.testing.assert_allclose(m, r, **tol)
    for m, r in zip(*ours):  # the two layouts of one gradient: the same bits
        if m is not None:
            np.testing.assert_array_equal(m, r)


def test_mid_sized_leaky_relu_gradcheck_float64():
    x = numdiff.tensor(np.random.default_rng(13).uniform(-1, 1, (20, 15)), requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: F.leaky_relu(t, 0.1) * t, (x,))


def test_mid_sized_backward_refuses_a_gradient_of_another_shape():
    x = numdiff.tensor(np.ones(SHAPE), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: gradient has shape \(40, 24\)"):
        F.leaky_relu(x, 0.1).backward(numdiff.ones(SHAPE[::-1], dtype=numdiff.float64))


def test_a_swept_attribute_keeps_its_own_value():
    # The float32 form of an attribute is cached per value: each slope still gets its own.
    x = numdiff.tensor(np.full(SHAPE, -1.0, np.float32), requires_grad=True)
    for slope in (0.1, 0.2, 0.3):
        x.grad = None
        F.leaky_relu(x, slope).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full(SHAPE, np.float32(slope)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_saved_number_is_read_once_as_the_general_path_reads_it(dtype):
    # w - 0.01 * g (MAML's inner step): mul saved the 0.01 as a 0-d array.
    rng = np.random.default_rng(14)
    values = {"g": rng.standard_normal(SHAPE).astype(dtype), "x": rng.standard_normal(SHAPE).astype(dtype)}
    for name, saved_number in (("mul", "y"), ("div", "y"), ("pow", "y")):
        rule = RULES[name]
        values[saved_number] = np.asarray(0.37, dtype=dtype)
        for needed in ((0,), (0, 1)):
            run = contiguous_backward(rule, needed)
            if run is None:
                continue
            with np.errstate(all="ignore"):
                values["out"] = elementwise.forward(rule, (values["x"], values["y"]), (), SHAPE, np.dtype(dtype))
                expected = elementwise.backward(rule, needed, values, ())
                got = run(values["g"], [values.get(k) for k in rule.saved], ())
            assert got is not None, name
            for a, b in zip(got, expected):
                assert a.shape == b.shape == SHAPE
                np.testing.assert_array_equal(a, b, err_msg=f"{name} {needed}")
    w = numdiff.tensor(values["x"], requires_grad=True)
    (w * 0.01).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full(SHAPE, dtype(0.01)))
