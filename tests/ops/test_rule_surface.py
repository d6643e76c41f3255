"""The scalar rule table makes the surface: each row's public function, Tensor method and in-place
form exist because of the row, with no list to edit (numdiff/_ground/scalar_rules.py)."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff._ground.scalar_rules import RULES

METHOD_RULES = sorted(name for name, rule in RULES.items() if rule.method and not rule.attrs)


@pytest.mark.parametrize("name", METHOD_RULES)
def test_a_method_rule_has_its_in_place_form_writing_into_the_tensor(name):
    rule = RULES[name]
    rng = np.random.default_rng(5)
    x = numdiff.tensor(rng.uniform(0.2, 0.8, 6))
    others = [numdiff.tensor(rng.uniform(0.2, 0.8, 6)) for _ in range(rule.arity - 1)]
    expected = getattr(x, name)(*others).numpy()
    storage = x.numpy()
    result = getattr(x, f"{name}_")(*others)
    assert result is x and x._version == 1
    np.testing.assert_allclose(storage, expected, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("name", sorted(name for name, rule in RULES.items() if rule.export))
def test_an_exported_rule_is_a_numdiff_function(name):
    assert name in numdiff.__all__
    assert getattr(numdiff, name).__name__ == name


def test_binary_method_rules_get_in_place_forms_from_the_table():
    x, y = numdiff.tensor([3.0, 4.0]), numdiff.tensor([4.0, 3.0])
    x.hypot_(y)
    np.testing.assert_allclose(x.numpy(), [5.0, 5.0])
    assert {"atan2_", "hypot_", "logaddexp_", "xlogy_"} <= set(dir(numdiff.Tensor))
