"""Sequential's operators, as PyTorch's: ``a + b`` and ``a += b`` chain two Sequentials, ``a * n``,
``n * a`` and ``a *= n`` repeat one (the same module objects, so repeated layers share weights)."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("lib", [numdiff, torch], ids=["numdiff", "torch"])
def test_add_and_multiply_build_the_same_chains_as_torch(lib):
    first, second = lib.nn.Linear(2, 2), lib.nn.Tanh()
    a, b = lib.nn.Sequential(first), lib.nn.Sequential(second)
    chained = a + b
    assert [type(m).__name__ for m in chained] == ["Linear", "Tanh"] and chained[0] is first and len(a) == 1
    a += b
    assert len(a) == 2 and a[1] is second
    repeated = b * 3
    assert len(repeated) == 3 and all(m is second for m in repeated) and len(2 * b) == 2
    b *= 2
    assert len(b) == 2 and b[0] is b[1] is second
    assert len(list((lib.nn.Sequential(first) * 2).parameters())) == 2  # shared weights counted once


def test_a_repeated_layer_shares_its_weights_in_forward_and_backward():
    layer = nn.Linear(2, 2)
    model = nn.Sequential(layer) * 2
    x = numdiff.tensor(np.array([[1.0, -2.0]], dtype=np.float32))
    np.testing.assert_allclose(model(x).detach().numpy(), layer(layer(x)).detach().numpy())


def test_bad_operands_are_refused_naming_the_operator():
    with pytest.raises(ValueError, match=r"Sequential \+: only another Sequential can be added, got Linear"):
        nn.Sequential() + nn.Linear(1, 1)
    with pytest.raises(TypeError, match=r"Sequential \*: the factor must be an int, got float"):
        nn.Sequential() * 2.0
    with pytest.raises(ValueError, match=r"Sequential \*=: the factor must be positive, got 0"):
        seq = nn.Sequential(nn.ReLU())
        seq *= 0
