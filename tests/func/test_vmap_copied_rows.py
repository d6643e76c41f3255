"""A product whose left operand repeats rows (vmap's copies of an input that a level is not
batched over) rounds as the product without the copies.

From the jacobians_hessians tutorial: vmap(jacrev(f)) must be allclose to jacrev of the summed f
in float32, as in PyTorch. The rerun of f inside the vjp under a second vmap multiplied 64 x 33
copied rows in one GEMM, which summed in another order than the 64 distinct rows did.
"""

from __future__ import annotations

import numpy as np

import numdiff
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling
from numdiff.func import jacrev, vmap


def _predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


def _data(dtype=numdiff.float32):
    numdiff.manual_seed(0)
    return numdiff.randn(33, 31, dtype=dtype), numdiff.randn(33, dtype=dtype), numdiff.randn(64, 31, dtype=dtype)


def test_vmap_of_jacrev_matches_jacrev_of_the_summed_function_in_float32():
    weight, bias, x = _data()
    per_example = vmap(jacrev(_predict, argnums=2), in_dims=(None, None, 0))(weight, bias, x)
    summed = jacrev(lambda w, b, v: _predict(w, b, v).sum(0), argnums=2)(weight, bias, x).movedim(1, 0)
    assert numdiff.allclose(per_example, summed)


def test_vmap_of_jacrev_through_matmul_matches_the_closed_form_in_float32():
    weight, _, x = _data()
    jac = vmap(jacrev(lambda v: (v @ weight.T).tanh()))(x)
    y = (x @ weight.T).tanh()
    assert numdiff.allclose(jac, (1 - y * y)[:, :, None] * weight[None])


def test_vmap_of_jacrev_keeps_each_entry_gradient_separate_in_float64():
    weight, bias, x = _data(numdiff.float64)
    jac = vmap(jacrev(_predict, argnums=2), in_dims=(None, None, 0))(weight, bias, x).numpy()
    z = x.numpy() @ weight.numpy().T + bias.numpy()
    expected = (1 - np.tanh(z) ** 2)[:, :, None] * weight.numpy()[None]
    np.testing.assert_allclose(jac, expected, rtol=1e-12, atol=1e-12)


def test_products_of_an_expanded_input_equal_the_broadcast_product_bitwise():
    weight, bias, x = _data()
    copied = x.unsqueeze(1).expand(64, 9, 31)
    np.testing.assert_array_equal((copied @ weight.T).numpy(), (x @ weight.T).unsqueeze(1).expand(64, 9, 33).numpy())
    np.testing.assert_array_equal(
        F.linear(copied, weight, bias).numpy(), F.linear(x, weight, bias).unsqueeze(1).expand(64, 9, 33).numpy()
    )


def test_gradient_through_an_expanded_input_sums_over_the_copies():
    weight, bias, x = _data(numdiff.float64)
    x.requires_grad_(True)
    F.linear(x.unsqueeze(1).expand(64, 3, 31), weight, bias).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * weight.numpy().sum(0)[None].repeat(64, 0), rtol=1e-12)
    x.grad = None
    (x.unsqueeze(1).expand(64, 3, 31) @ weight.T).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * weight.numpy().sum(0)[None].repeat(64, 0), rtol=1e-12)
