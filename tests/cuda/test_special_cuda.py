"""The special-function rules on CUDA (the simulator without a GPU): the device functions built from
numdiff.kernels._special's source give the CPU loops' values and gradients, eager and compiled."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

NAN, INF = float("nan"), float("inf")
EDGES = [NAN, -INF, INF, 0.0, -0.0, -1.0, -2.5, -0.5, 1e-300, 0.5, 1.4616321449683622, 3.0, 1e10]

FUNCTIONS = {
    "lgamma": numdiff.lgamma,
    "digamma": numdiff.digamma,
    "trigamma": lambda x: numdiff.polygamma(1, x),
    "polygamma3": lambda x: numdiff.polygamma(3, x),
    "erfc": numdiff.erfc,
    "erfinv": lambda x: numdiff.erfinv(x * 0.1),
    "logit": lambda x: numdiff.logit(x * 0.1),
}


def _values_and_gradients(fn, x: np.ndarray, device: str, create_graph: bool):
    leaf = numdiff.tensor(x, device=device, requires_grad=True)
    out = fn(leaf)
    (g,) = numdiff.autograd.grad(out, leaf, numdiff.ones_like(out), create_graph=create_graph)
    return out.detach().cpu().numpy(), g.detach().cpu().numpy()


@pytest.mark.parametrize("create_graph", [False, True], ids=["kernel", "tensor-form"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_device_values_and_gradients_equal_the_cpus(name, dtype, create_graph):
    x = np.array(EDGES, dtype=dtype)
    expected = _values_and_gradients(FUNCTIONS[name], x, "cpu", create_graph)
    actual = _values_and_gradients(FUNCTIONS[name], x, "cuda", create_graph)
    # The CPU loops may contract a multiply-add (one rounding): a few ulp, and 1e-16 at digamma's zero.
    for e, a in zip(expected, actual):
        np.testing.assert_allclose(a, e, rtol=1e-13 if dtype == np.float64 else 3e-7, atol=1e-15, equal_nan=True)


def test_compiled_special_functions_on_cuda_match_eager():
    def f(x):
        return (numdiff.digamma(x) * 2.0 + numdiff.erfinv(x * 0.5) + numdiff.polygamma(2, x) + x.lgamma()).sum()

    compiled = numdiff.compile(f)
    x = np.linspace(0.1, 0.9, 6)
    xc = numdiff.tensor(x, device="cuda", requires_grad=True)
    out = compiled(xc)
    out.backward()
    x2 = numdiff.tensor(x, requires_grad=True)
    expected = f(x2)
    expected.backward()
    np.testing.assert_allclose(out.item(), expected.item(), rtol=1e-13)
    np.testing.assert_allclose(xc.grad.cpu().numpy(), x2.grad.numpy(), rtol=1e-13)
    (source,) = compiled.compiled.sources
    assert "m_digamma(" in source and "m_erfinv(" in source
