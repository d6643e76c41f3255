"""nn.utils.parametrize: a parametrized tensor is recomputed from its original on every read (once
inside cached()), assignments go through right_inverse, gradients reach the original, and removing
the parametrization gives the module its class and a plain parameter back."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.nn.utils import parametrize


class Symmetric(nn.Module):
    def forward(self, w):
        return w.triu() + w.triu(1).transpose(-1, -2)


class Skew(nn.Module):
    def forward(self, w):
        a = w.triu(1)
        return a - a.transpose(-1, -2)

    def right_inverse(self, a):
        return a.triu(1)


def _layer(seed: int = 0) -> nn.Linear:
    numdiff.manual_seed(seed)
    return nn.Linear(3, 3)


def test_the_tensor_becomes_a_property_of_a_subclass():
    layer = _layer()
    original = layer.weight
    parametrize.register_parametrization(layer, "weight", Symmetric())
    w = layer.weight.detach().numpy()
    np.testing.assert_array_equal(w, w.T)
    assert type(layer).__name__ == "ParametrizedLinear" and isinstance(layer, nn.Linear)
    assert parametrize.type_before_parametrizations(layer) is nn.Linear
    assert layer.parametrizations.weight.original is original  # an optimizer holding it still works
    assert [n for n, _ in layer.named_parameters()] == ["bias", "parametrizations.weight.original"]
    assert type(_layer()) is nn.Linear  # other instances keep their class
    assert parametrize.is_parametrized(layer) and parametrize.is_parametrized(layer, "weight")
    assert not parametrize.is_parametrized(layer, "bias")


def test_gradients_reach_the_original_as_through_the_hand_written_layer():
    layer = _layer().double()
    parametrize.register_parametrization(layer, "weight", Symmetric())
    x = numdiff.randn(4, 3, dtype=numdiff.float64)
    layer(x).pow(2).sum().backward()
    w = layer.parametrizations.weight.original.detach().clone().requires_grad_()
    (x @ Symmetric()(w).T + layer.bias.detach()).pow(2).sum().backward()
    np.testing.assert_allclose(layer.parametrizations.weight.original.grad.numpy(), w.grad.numpy())


def test_the_gradient_matches_central_differences():
    layer = _layer().double()
    parametrize.register_parametrization(layer, "weight", Skew())
    x = numdiff.randn(2, 3, dtype=numdiff.float64)
    original = layer.parametrizations.weight.original
    layer(x).sin().sum().backward()
    eps, numeric = 1e-6, np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            values = []
            for sign in (1, -1):
                with numdiff.no_grad():
                    original[i, j] += sign * eps
                    values.append(float(layer(x).sin().sum()))
                    original[i, j] -= sign * eps
            numeric[i, j] = (values[0] - values[1]) / (2 * eps)
    np.testing.assert_allclose(original.grad.numpy(), numeric, atol=1e-8)


def test_assignment_goes_through_right_inverse():
    layer = _layer()
    parametrize.register_parametrization(layer, "weight", Skew())
    w = numdiff.rand(3, 3)
    w = w - w.T
    layer.weight = w
    np.testing.assert_allclose(layer.weight.detach().numpy(), w.numpy(), atol=1e-7)


def test_cached_computes_each_parametrization_once():
    calls = []

    class Counting(nn.Module):
        def forward(self, w):
            calls.append(1)
            return w

    layer = _layer()
    parametrize.register_parametrization(layer, "weight", Counting())
    calls.clear()
    layer.weight + layer.weight
    assert len(calls) == 2
    with parametrize.cached():
        layer.weight + layer.weight
    assert len(calls) == 3


def test_chained_parametrizations_apply_in_order():
    class Double(nn.Module):
        def forward(self, w):
            return 2 * w

    layer = _layer()
    parametrize.register_parametrization(layer, "weight", Skew())
    parametrize.register_parametrization(layer, "weight", Double())
    original = layer.parametrizations.weight.original
    np.testing.assert_allclose(layer.weight.detach().numpy(), 2 * Skew()(original).detach().numpy())
    assert len(layer.parametrizations.weight) == 2


@pytest.mark.parametrize("leave_parametrized", [True, False])
def test_remove_gives_back_a_parameter_and_the_class(leave_parametrized):
    layer = _layer()
    before = layer.weight.detach().numpy().copy()
    parametrize.register_parametrization(layer, "weight", Symmetric())
    parametrized = layer.weight.detach().numpy().copy()
    parametrize.remove_parametrizations(layer, "weight", leave_parametrized=leave_parametrized)
    assert type(layer) is nn.Linear and not hasattr(layer, "parametrizations")
    assert isinstance(layer.weight, nn.Parameter)
    np.testing.assert_allclose(layer.weight.detach().numpy(), parametrized if leave_parametrized else before)


def test_state_dict_round_trip_between_parametrized_modules():
    a, b = _layer(0), _layer(1)
    for m in (a, b):
        parametrize.register_parametrization(m, "weight", Symmetric())
    assert list(a.state_dict()) == ["bias", "parametrizations.weight.original"]
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())


def test_a_parametrization_that_changes_the_shape_is_refused_unless_unsafe():
    class Row(nn.Module):
        def forward(self, w):
            return w[0]

    with pytest.raises(ValueError, match=r"\(3, 3\).*\(3,\).*unsafe=True"):
        parametrize.register_parametrization(_layer(), "weight", Row())
    layer = parametrize.register_parametrization(_layer(), "weight", Row(), unsafe=True)
    assert layer.weight.shape == (3,)


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match="no parameter or buffer named 'kernel'"):
        parametrize.register_parametrization(_layer(), "kernel", Symmetric())
    with pytest.raises(TypeError, match="must be an nn.Module"):
        parametrize.register_parametrization(_layer(), "weight", lambda t: t)
    with pytest.raises(ValueError, match="no parametrization on 'weight'"):
        parametrize.remove_parametrizations(_layer(), "weight")
