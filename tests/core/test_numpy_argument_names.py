"""``axis`` and ``keepdims``, NumPy's names that PyTorch's native functions accept for ``dim`` and
``keepdim``: the same functions take them in numdiff, and PyTorch's Python-level functions
refuse them in both libraries."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff as nd

torch = pytest.importorskip("torch")

X = np.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.sum(1, keepdims=True),
        lambda m, x: m.sum(x, axis=0, keepdims=True),
        lambda m, x: x.mean(axis=1),
        lambda m, x: x.std(axis=1, keepdims=True),
        lambda m, x: x.amax(axis=0, keepdims=True),
        lambda m, x: x.max(axis=1).values,
        lambda m, x: x.argmax(axis=1, keepdims=True),
        lambda m, x: m.logsumexp(x, axis=1, keepdims=True),
        lambda m, x: x.cumsum(axis=1),
        lambda m, x: x.softmax(axis=1),
        lambda m, x: x.unsqueeze(axis=0),
        lambda m, x: x[None].squeeze(axis=0),
        lambda m, x: m.cat([x, x], axis=0),
        lambda m, x: m.stack([x, x], axis=1),
        lambda m, x: m.concatenate([x, x], axis=1),
        lambda m, x: x.sort(axis=1, descending=True).values,
        lambda m, x: x.topk(2, axis=1).values,
        lambda m, x: x.index_select(axis=1, index=m.tensor([0, 2])),
        lambda m, x: m.var_mean(x, axis=1, keepdims=True)[0],
    ],
)
def test_the_numpy_names_give_pytorchs_results(call):
    expected = call(torch, torch.tensor(X)).numpy()
    got = call(nd, nd.tensor(X)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_a_name_given_twice_is_refused_by_name():
    with pytest.raises(TypeError, match="sum\\(\\) got both 'dim' and 'axis'"):
        nd.ones(2, 3).sum(dim=0, axis=1)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.norm(dim=1, keepdims=True),
        lambda m, x: x.split(1, axis=1),
        lambda m, x: x.roll(1, axis=1),
        lambda m, x: m.nn.functional.softmax(x, axis=1),
    ],
)
def test_pytorchs_python_level_functions_refuse_them_in_both_libraries(call):
    with pytest.raises(TypeError):
        call(torch, torch.tensor(X))
    with pytest.raises(TypeError):
        call(nd, nd.tensor(X))


def test_gradients_flow_through_the_renamed_call():
    x = nd.tensor(X, requires_grad=True)
    x.sum(axis=1, keepdims=True).mean().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 4), 1 / 3))
