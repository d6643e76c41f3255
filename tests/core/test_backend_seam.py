"""numdiff.backend's seam functions on the CPU: where an array lives, host copies both ways, moves
to a device, and the elementwise rule launchers every backend provides."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff as nd
from numdiff._ground.scalar_rules import RULES
from numdiff.backend import CPU, backend_for, is_host, is_numpy, like_host, move_array, to_host


def test_is_host_is_true_for_exactly_numpy_arrays():
    assert is_host(np.zeros(2))
    assert not is_host(np.float64(1.0))
    assert not is_host(1.0)
    assert not is_host(np.ma.zeros(2))  # a subclass is not what the CPU kernels take


def test_is_numpy_accepts_any_numpy_array_but_nothing_else():
    assert is_numpy(np.zeros(2))
    assert is_numpy(np.ma.zeros(2))
    assert not is_numpy([0.0, 1.0])
    assert not is_numpy(nd.zeros(2))


def test_host_copies_are_the_array_itself_on_the_cpu():
    x = np.arange(3.0)
    assert to_host(x) is x
    assert like_host(x, np.zeros(1)) is x


def test_to_host_of_a_non_array_names_what_it_got():
    with pytest.raises(AttributeError, match="to_host"):
        to_host([1.0])


def test_move_array_to_the_cpu_keeps_a_host_array_and_refuses_other_values():
    x = np.ones(2)
    assert move_array(x, nd.device("cpu")) is x
    with pytest.raises(TypeError, match="builtins.list"):
        move_array([1.0], nd.device("cpu"))


def test_the_cpu_rule_launchers_match_numpy():
    x = np.linspace(-2.0, 2.0, 7)
    out = backend_for(x).rule_forward(RULES["exp"], (x,), (), x.shape, x.dtype, x)
    np.testing.assert_allclose(out, np.exp(x))
    (grad,) = CPU.rule_backward(RULES["exp"], (0,), {"g": np.full(7, 2.0), "out": out}, ())
    np.testing.assert_allclose(grad, 2.0 * np.exp(x))


def test_a_float16_rule_gradient_is_computed_in_float32_and_rounded_once():
    x = np.array([0.1, 1.0, 3.0], np.float16)
    g = np.array([1000.0, 1.0, 0.5], np.float16)
    out = np.exp(x.astype(np.float32)).astype(np.float16)
    (grad,) = CPU.rule_backward(RULES["exp"], (0,), {"g": g, "out": out}, ())
    assert grad.dtype == np.float16
    expected = (g.astype(np.float32) * out.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(grad, expected)
