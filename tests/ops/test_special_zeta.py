"""special.zeta (Hurwitz zeta), the modified_bessel_i0 / i1 names and the Bessel functions J, Y and K
of orders 0 and 1, against torch.special."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

import numdiff

_X = [2.0, 1.0, 0.5, 3.0, 2.5, -2.0, 1.0000001, 60.0, math.inf, math.nan, 0.0, -1.0, 1.5]
_Q = [1.0, 0.0, -1.0, -1.5, 1e-3, 1e6, 0.5, 2.0, math.inf, -math.inf, math.nan, 0.3, 7.25, -3.0, -20.5]


def test_zeta_matches_torch_on_edges_and_ordinary_values():
    x, q = zip(*itertools.product(_X, _Q))
    expected = torch.special.zeta(torch.tensor(x, dtype=torch.float64), torch.tensor(q, dtype=torch.float64))
    got = numdiff.special.zeta(numdiff.tensor(x, dtype=numdiff.float64), numdiff.tensor(q, dtype=numdiff.float64))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-13, atol=0)


def test_zeta_takes_numbers_broadcasts_and_promotes_as_torch():
    q = [[0.5], [2.0]]
    cases = [
        (lambda lib: lib.special.zeta(lib.tensor([2.0, 3.5]), lib.tensor(q))),  # float32, broadcast
        (lambda lib: lib.special.zeta(3.0, lib.tensor(q, dtype=lib.float64))),
        (lambda lib: lib.special.zeta(lib.tensor([2, 3]), 2)),  # integers: the default float dtype
    ]
    for case in cases:
        got, expected = case(numdiff), case(torch)
        assert str(got.dtype).split(".")[1] == str(expected.dtype).split(".")[1] and tuple(got.shape) == tuple(expected.shape)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=2e-6)


def test_zeta_gradients_pass_gradcheck_and_match_torch_in_q():
    x = numdiff.tensor([2.0, 3.5, 1.5, 4.0], dtype=numdiff.float64, requires_grad=True)
    q = numdiff.tensor([0.25, 2.0, 7.0, -1.5], dtype=numdiff.float64, requires_grad=True)
    assert numdiff.autograd.gradcheck(numdiff.special.zeta, (x[:3], q[:3]))
    numdiff.special.zeta(x, q).sum().backward()
    tq = torch.tensor(q.tolist(), dtype=torch.float64, requires_grad=True)
    torch.special.zeta(torch.tensor(x.tolist(), dtype=torch.float64), tq).sum().backward()
    np.testing.assert_allclose(q.grad.numpy(), tq.grad.numpy(), rtol=1e-12)


def test_zeta_gradient_is_zero_outside_its_domain():
    x = numdiff.tensor([0.5, 1.0, 2.0], dtype=numdiff.float64, requires_grad=True)
    q = numdiff.tensor([1.0, 1.0, -2.0], dtype=numdiff.float64, requires_grad=True)
    numdiff.special.zeta(x, q).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0] and q.grad.tolist() == [0.0, 0.0, 0.0]


def test_zeta_bad_arguments_name_the_function_and_the_types():
    with pytest.raises(TypeError, match="special.zeta: .*got float and float"):
        numdiff.special.zeta(2.0, 1.0)
    with pytest.raises(TypeError, match="special.zeta: .*got str and Tensor"):
        numdiff.special.zeta("2", numdiff.ones(2))
    with pytest.raises(TypeError, match="special.zeta: .*got Tensor and list"):
        numdiff.special.zeta(numdiff.ones(2), [1.0, 2.0])


@pytest.mark.parametrize("name", ["modified_bessel_i0", "modified_bessel_i1"])
def test_modified_bessel_names_match_torch(name):
    values = [0.0, -0.0, -1.0, 2.5, -30.0, 700.0, 1e3, -1e3, math.inf, -math.inf, math.nan]
    expected = getattr(torch.special, name)(torch.tensor(values, dtype=torch.float64))
    got = getattr(numdiff.special, name)(numdiff.tensor(values, dtype=numdiff.float64))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-14)
    x = numdiff.tensor([-2.0, 0.5, 3.0], dtype=numdiff.float64, requires_grad=True)
    assert numdiff.autograd.gradcheck(getattr(numdiff.special, name), (x,))


_BESSELS = [
    "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
]  # fmt: skip
_EDGES = [0.0, -0.0, -1.0, 2.5, 1e-300, 30.0, 1e3, 1e17, -1e3, 800.0, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("name", _BESSELS)
def test_bessel_functions_match_torch_and_record_no_gradient(name):
    ours, theirs = getattr(numdiff.special, name), getattr(torch.special, name)
    got = ours(numdiff.tensor(_EDGES, dtype=numdiff.float64, requires_grad=True))
    # rtol 2e-12: torch's y0(2.5) is 1.4e-12 off mpmath's 0.498070359615232, which numdiff (Cephes) gives
    np.testing.assert_allclose(got.numpy(), theirs(torch.tensor(_EDGES, dtype=torch.float64)).numpy(), rtol=2e-12, atol=1e-13)
    assert not got.requires_grad and got.grad_fn is None  # torch's is a constant too
    # float32: torch computes in float32, numdiff rounds the float64 value (closer), so moderate arguments only
    moderate = [0.5, 1.0, 3.0, 7.5, 20.0]
    got = ours(numdiff.tensor(moderate))
    assert str(got.dtype) == "numdiff.float32"
    np.testing.assert_allclose(got.numpy(), theirs(torch.tensor(moderate)).numpy(), rtol=2e-6, atol=1e-7)
    assert str(ours(numdiff.tensor([1, 2])).dtype) == str(theirs(torch.tensor([1, 2])).dtype).replace("torch", "numdiff")


def test_bessel_functions_refuse_what_they_cannot_take():
    with pytest.raises(TypeError, match="special.bessel_j0: expects a float32, float64 or integer input, got dtype"):
        numdiff.special.bessel_j0(numdiff.ones(2, dtype=numdiff.float16))
    with pytest.raises(TypeError, match="special.modified_bessel_k0: argument 'input' must be a Tensor, not float"):
        numdiff.special.modified_bessel_k0(1.0)
