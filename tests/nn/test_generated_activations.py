"""The activations numdiff/ops/activation.py generates from their scalar rules (functional="plain" or
"inplace"): PyTorch's signature, values and gradients, the in-place form, and errors that name the op."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import numdiff
import numdiff.nn.functional as nf
from numdiff._ground.scalar_expressions import ScalarRule, check_rules
from numdiff._ground.scalar_rules import RULES
from numdiff.autograd import gradcheck

GENERATED = sorted(name for name, rule in RULES.items() if rule.functional)
BUILTIN_SIGNATURES = {
    "hardshrink": [("input", inspect.Parameter.empty), ("lambd", 0.5)],
    "logsigmoid": [("input", inspect.Parameter.empty)],
}
X = np.array([-2.5, -0.7, 0.3, 1.9, 4.2])  # away from every kink (0, +-0.5, +-3)


def test_the_rows_that_ask_are_generated():
    assert {"silu", "mish", "hardswish", "hardsigmoid", "selu", "logsigmoid", "softsign", "tanhshrink",
            "hardshrink"} == set(GENERATED)  # fmt: skip


@pytest.mark.parametrize("name", GENERATED)
def test_signature_is_pytorchs(name):
    ours = [(p.name, p.default) for p in inspect.signature(getattr(nf, name)).parameters.values()]
    try:
        theirs = [(p.name, p.default) for p in inspect.signature(getattr(torch.nn.functional, name)).parameters.values()]
    except ValueError:  # C builtins without a text signature, as PyTorch documents them
        theirs = BUILTIN_SIGNATURES[name]
    assert ours == theirs
    assert name in nf.__all__ and getattr(nf, name).__doc__


@pytest.mark.parametrize("name", GENERATED)
def test_forward_matches_torch_and_gradient_checks(name):
    expected = getattr(torch.nn.functional, name)(torch.tensor(X)).numpy()
    x = numdiff.tensor(X, requires_grad=True)
    np.testing.assert_allclose(getattr(nf, name)(x).detach().numpy(), expected, rtol=1e-13, atol=1e-15)
    assert gradcheck(getattr(nf, name), (x,))


@pytest.mark.parametrize("name", [n for n in GENERATED if RULES[n].functional == "inplace"])
def test_inplace_writes_into_the_input(name):
    x = numdiff.tensor(X.copy())
    storage = x.numpy()
    out = getattr(nf, name)(x, True)
    assert out is x
    np.testing.assert_allclose(storage, getattr(torch.nn.functional, name)(torch.tensor(X)).numpy(), rtol=1e-13)


def test_attrs_by_position_and_keyword():
    x = numdiff.tensor([0.2, -0.9, 1.5])
    np.testing.assert_array_equal(nf.hardshrink(x, 1.0).numpy(), [0.0, 0.0, 1.5])
    np.testing.assert_array_equal(nf.hardshrink(x, lambd=0.1).numpy(), x.numpy())
    np.testing.assert_array_equal(nf.hardshrink(input=x).numpy(), [0.0, *x.numpy()[1:]])


@pytest.mark.parametrize("name", GENERATED)
def test_an_integer_tensor_is_refused_naming_the_op(name):
    with pytest.raises(TypeError, match=f"{name}: expected a floating point tensor, got dtype"):
        getattr(nf, name)(numdiff.tensor([1, 2]))


def test_a_bad_attr_is_refused_naming_the_op_and_the_value():
    with pytest.raises(TypeError, match="hardshrink: lambd must be a number, got 'big'"):
        nf.hardshrink(numdiff.tensor([1.0]), "big")
    with pytest.raises(TypeError, match="hardshrink.*unexpected keyword argument 'alpha'"):
        nf.hardshrink(numdiff.tensor([1.0]), alpha=1.0)
    with pytest.raises(TypeError, match="hardshrink.*second value for 'lambd'"):
        nf.hardshrink(numdiff.tensor([1.0]), 0.5, lambd=0.5)
    with pytest.raises(TypeError, match="hardshrink.*takes 2 arguments, got 3"):
        nf.hardshrink(numdiff.tensor([1.0]), 0.5, 0.7)


def test_the_table_refuses_a_functional_it_cannot_generate():
    with pytest.raises(ValueError, match="scalar rule 'bad': functional='yes'"):
        check_rules((ScalarRule("bad", 1, "x", ("1.0",), functional="yes"),))
    with pytest.raises(ValueError, match="scalar rule 'pair': functional='plain'"):
        check_rules((ScalarRule("pair", 2, "x + y", ("1.0", "1.0"), functional="plain"),))
