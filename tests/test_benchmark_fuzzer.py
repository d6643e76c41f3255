"""numdiff.utils.benchmark's Fuzzer (PyTorch's benchmark recipe draws its inputs with it): draws
respect the element bounds and constraints, a seed repeats them, aliases take the other
parameter's value, and non-contiguous layouts have the drawn shape."""

from __future__ import annotations

import numpy as np
import pytest

from numdiff.utils.benchmark import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias


def _fuzzer(seed=0, **tensor_kw):
    return Fuzzer(
        parameters=[
            FuzzedParameter("k0", minval=1, maxval=10000, distribution="loguniform"),
            FuzzedParameter("k1", minval=1, maxval=10000, distribution="loguniform"),
        ],
        tensors=[FuzzedTensor("x", size=("k0", "k1"), min_elements=128, max_elements=100000, **tensor_kw)],
        seed=seed,
    )


def test_draws_keep_the_element_bounds_and_shapes():
    for tensors, properties, params in _fuzzer(probability_contiguous=0.5).take(20):
        x = tensors["x"]
        assert tuple(x.shape) == (params["k0"], params["k1"])
        assert 128 <= x.numel() <= 100000 and properties["x"]["numel"] == x.numel()
        assert properties["x"]["is_contiguous"] == x.is_contiguous()


def test_a_seed_repeats_the_draws():
    first = [(p, t["x"].numpy().copy()) for t, _, p in _fuzzer(seed=3).take(3)]
    again = [(p, t["x"].numpy().copy()) for t, _, p in _fuzzer(seed=3).take(3)]
    for (p1, x1), (p2, x2) in zip(first, again):
        assert p1 == p2
        np.testing.assert_array_equal(x1, x2)


def test_steps_and_orders_make_strided_tensors_of_the_drawn_shape():
    fuzzer = Fuzzer([FuzzedParameter("n", 2, 6, distribution="uniform"), FuzzedParameter("s", distribution={2: 1.0})],
                    [FuzzedTensor("x", size=("n", 3), steps=("s", 1), probability_contiguous=0.0)], seed=1)
    tensors, properties, params = next(fuzzer.take(1))
    assert tuple(tensors["x"].shape) == (params["n"], 3) and not tensors["x"].is_contiguous()
    assert properties["x"]["steps"] == (2, 1)


def test_aliases_and_constraints():
    fuzzer = Fuzzer(
        [FuzzedParameter("a", 1, 50, distribution="uniform"),
         FuzzedParameter("b", distribution={ParameterAlias("a"): 0.5, 7: 0.5})],
        [], constraints=[lambda p: p["a"] % 2 == 0], seed=0,
    )
    draws = [params for _, _, params in fuzzer.take(30)]
    assert all(p["a"] % 2 == 0 for p in draws)
    assert all(p["b"] in (p["a"], 7) for p in draws) and any(p["b"] == p["a"] != 7 for p in draws)


def test_bad_specifications_are_named():
    with pytest.raises(ValueError, match=r"FuzzedParameter\('k'\): distribution must be"):
        FuzzedParameter("k", 1, 2, distribution="normal")
    with pytest.raises(ValueError, match="probabilities must sum to 1"):
        FuzzedParameter("k", distribution={1: 0.3})
    with pytest.raises(ValueError, match="loguniform needs minval > 0"):
        FuzzedParameter("k", 0, 2, distribution="loguniform")
    with pytest.raises(ValueError, match="parameter names must be unique"):
        Fuzzer([FuzzedParameter("k", 1, 2, "uniform"), FuzzedParameter("k", 1, 2, "uniform")], [])
    impossible = Fuzzer([FuzzedParameter("k", 1, 2, "uniform")], [FuzzedTensor("x", ("k",), min_elements=10)])
    with pytest.raises(ValueError, match="no draw in 1000 tries"):
        next(impossible.take(1))
