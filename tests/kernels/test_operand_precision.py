"""Generated elementwise kernels that call exp, erf, tanh or log compute a float32 operand in float32
(numdiff/kernels/_elementwise_source.py `in_operand_precision`): the rules' float constants no longer widen
the arithmetic to float64, and results stay within float32 rounding of PyTorch's."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import torch

import numdiff
from numdiff._ground.scalar_expressions import math_functions_in
from numdiff.kernels import _elementwise_source, _vecmath, elementwise
from numdiff.kernels._codegen import vjp_expressions


@numba.njit
def _typed_constant(x):
    return _vecmath.like(0.1, x)


def test_like_rounds_a_constant_to_float32_only_for_a_float32_operand():
    assert _typed_constant(np.float32(1.0)) == float(np.float32(0.1)) != 0.1
    assert _typed_constant(1.0) == 0.1
    assert _typed_constant(np.int64(3)) == 0.1
    assert _vecmath.like(0.1, np.float32(1.0)) == 0.1  # from Python: unchanged


@pytest.mark.parametrize("rule", ["gelu", "sigmoid", "silu", "elu"])
def test_transcendental_kernels_read_their_constants_in_the_operands_precision(rule):
    expressions = [elementwise.RULES[rule].forward, *vjp_expressions(elementwise.RULES[rule], (0,))]
    transcendental = [e for e in expressions if math_functions_in(e) & set(_elementwise_source.SINGLE_PRECISION_MATH)]
    assert transcendental
    for expression in transcendental:
        code = _elementwise_source.in_operand_precision(_elementwise_source.scalar_code(expression, {"x": "v_x", "g": "v_g"}), ["x"])
        assert "_vecmath.like(" in code, code


def test_kernels_without_exp_or_erf_keep_their_float64_constants():
    code = _elementwise_source.scalar_code("x * 0.5 + 1.0", {"x": "v_x"})
    assert _elementwise_source.in_operand_precision(code, ["x"]) == code
    sine = _elementwise_source.scalar_code("math.sin(x) * math.exp(x) * 0.5", {"x": "v_x"})
    assert _elementwise_source.in_operand_precision(sine, ["x"]) == sine  # sin's guard keeps float64 forms


@pytest.mark.parametrize("name", ["gelu", "sigmoid", "silu", "softplus", "elu", "mish", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_activation_and_gradient_match_torch_in_each_dtype(name, dtype):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(70000) * 4).astype(dtype)  # above the parallel grain, both tails of exp
    g = rng.standard_normal(x.size).astype(dtype)
    xm, xt = numdiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_m = getattr(numdiff.nn.functional, name)(xm)
    out_t = getattr(torch.nn.functional, name)(xt)
    out_m.backward(numdiff.tensor(g))
    out_t.backward(torch.tensor(g))
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == "float32" else dict(rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(out_m.detach().numpy(), out_t.detach().numpy(), **tol)
    np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), **tol)
    assert out_m.dtype == getattr(numdiff, dtype) and xm.grad.dtype == getattr(numdiff, dtype)
