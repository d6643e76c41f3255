"""The generated CUDA kernels of the scalar rules, on the simulator: the same values and gradients
as the generated CPU loops, including PyTorch's NaN semantics, transposed and broadcast operands."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf
from numdiff.cuda.kernels import elementwise as cuda_elementwise

NAN = float("nan")

CASES = {
    "relu": lambda a, b: numdiff.relu(a),
    "maximum": numdiff.maximum,
    "div-transposed": lambda a, b: a.transpose(0, 1) / b.transpose(0, 1),
    "mul-broadcast-scalar": lambda a, b: a * b[:1, :1] * 2.0,
    "elu": lambda a, b: nf.elu(a, 0.5),
    "sigmoid": lambda a, b: a.sigmoid(),
}


def _run(fn, a, b, device, create_graph):
    ta = numdiff.tensor(a, device=device, requires_grad=True)
    tb = numdiff.tensor(b, device=device, requires_grad=True)
    out = fn(ta, tb)
    grad = numdiff.tensor(np.linspace(-1.0, 1.0, out.numel()).reshape(tuple(out.shape)), device=device)
    grads = numdiff.autograd.grad(out, (ta, tb), grad, create_graph=create_graph, allow_unused=True)
    return [out.detach().cpu().numpy()] + [g.detach().cpu().numpy() if g is not None else None for g in grads]


@pytest.mark.parametrize("create_graph", [False, True], ids=["kernel", "tensor-form"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_cuda_kernels_match_the_cpu_loops(name, create_graph):
    a = np.array([[NAN, -1.0, 2.0], [0.5, 3.0, -0.25]])
    b = np.array([[1.0, NAN, 2.0], [0.5, -1.5, 4.0]])
    expected = _run(CASES[name], a, b, "cpu", create_graph)
    actual = _run(CASES[name], a, b, "cuda", create_graph)
    for e, c in zip(expected, actual):
        if e is None:
            assert c is None
        else:
            np.testing.assert_allclose(c, e, rtol=1e-12, equal_nan=True)


def test_relu_kernel_is_generated_from_the_rule():
    numdiff.relu(numdiff.tensor([1.0, -1.0], device="cuda"))
    assert ("relu", "forward", ()) in cuda_elementwise.RULE_KERNELS


# Functions whose Python math counterpart raises outside its domain or on overflow: on the
# simulator the kernels run as Python, so numdiff.cuda.kernels._scalar_math gives what a GPU gives.
EDGE_FUNCTIONS = ("tan", "asin", "acos", "sinh", "cosh", "acosh", "atanh", "log2", "log10")


@pytest.mark.parametrize("name", EDGE_FUNCTIONS)
def test_functions_at_their_domain_edges_match_the_cpu(name):
    x = np.array([NAN, -np.inf, np.inf, -2.0, -1.0, -0.0, 0.0, 0.5, 1.0, 1.5, 800.0])
    fn = getattr(numdiff, name)
    expected = fn(numdiff.tensor(x)).numpy()
    actual = fn(numdiff.tensor(x, device="cuda")).cpu().numpy()
    np.testing.assert_allclose(actual, expected, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round", "frac"])
def test_roundings_give_the_cpus_bits(name):
    from tests.ops.test_scalar_rules import ROUNDING_INPUTS

    for dtype in (np.float64, np.float32):
        x = np.array(ROUNDING_INPUTS, dtype=dtype)
        fn = getattr(numdiff, name)
        expected = fn(numdiff.tensor(x)).numpy()
        actual = fn(numdiff.tensor(x, device="cuda")).cpu().numpy()
        np.testing.assert_array_equal(actual, expected)
        np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected))


@pytest.mark.parametrize("name", ["fmod", "remainder"])
def test_fmod_and_remainder_give_the_cpus_values(name):
    x = np.array([-7.5, 7.5, 3.0, np.inf, 2.0, -0.0, -2.0])
    y = np.array([2.0, -2.0, 0.0, 1.0, NAN, 3.0, 0.5])
    fn = getattr(numdiff, name)
    expected = fn(numdiff.tensor(x), numdiff.tensor(y)).numpy()
    actual = fn(numdiff.tensor(x, device="cuda"), numdiff.tensor(y, device="cuda")).cpu().numpy()
    np.testing.assert_array_equal(actual, expected)
    finite = ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(actual[finite]), np.signbit(expected[finite]))
    ints = fn(numdiff.tensor([7, -7], device="cuda"), 3).cpu().tolist()
    assert ints == fn(numdiff.tensor([7, -7]), 3).tolist()
