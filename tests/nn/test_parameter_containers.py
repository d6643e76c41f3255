"""nn.ParameterList and nn.ParameterDict against torch.nn's: registration (parameters,
named_parameters, state_dict keys), list and dict operations, conversion of plain tensors,
reprs, and training through them."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn

torch = pytest.importorskip("torch")


def _pair(lib, kind):
    """The same container built in both libraries, inside a parent module."""
    arrays = [np.arange(6.0).reshape(2, 3), np.ones(4), np.zeros((1, 2, 2))]
    parent = lib.nn.Module()
    if kind == "list":
        parent.weights = lib.nn.ParameterList([lib.tensor(arrays[0]), lib.nn.Parameter(lib.tensor(arrays[1]))])
        parent.weights.append(lib.tensor(arrays[2], dtype=lib.float32))
        parent.weights.extend(["not a tensor", lib.nn.Parameter(lib.ones(3), requires_grad=False)])
    else:
        parent.weights = lib.nn.ParameterDict({"zeta": lib.tensor(arrays[0]), "alpha": lib.tensor(arrays[1])})
        parent.weights.update([("mid", lib.tensor(arrays[2])), ("name", "not a tensor")])
        parent.weights["frozen"] = lib.nn.Parameter(lib.ones(3), requires_grad=False)
    return parent


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_registration_matches_torch(kind):
    ours, theirs = _pair(numdiff, kind), _pair(torch, kind)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert type(p) is nn.Parameter and p.requires_grad == q.requires_grad
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert len(list(ours.parameters())) == len(list(theirs.parameters()))
    assert len(ours.weights) == len(theirs.weights)


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_repr_matches_torch(kind):
    ours, theirs = _pair(numdiff, kind), _pair(torch, kind)
    assert repr(ours) == repr(theirs).replace("torch.float", "numdiff.float")
    for lib in (numdiff, torch):
        assert repr(lib.nn.ParameterList()) == "ParameterList()"
        assert repr(lib.nn.ParameterDict()) == "ParameterDict()"
    one = repr(nn.ParameterList([numdiff.zeros(2)]))
    assert one == repr(torch.nn.ParameterList([torch.zeros(2)])).replace("torch.", "numdiff.")


def test_parameter_list_indexing_iteration_and_slices():
    a, b, c = (numdiff.full((2,), float(i)) for i in range(3))
    params = nn.ParameterList([a, b])
    params += [c]
    assert len(params) == 3 and [float(p[0]) for p in params] == [0.0, 1.0, 2.0]
    assert float(params[-1][0]) == 2.0
    tail = params[1:]
    assert isinstance(tail, nn.ParameterList) and [float(p[0]) for p in tail] == [1.0, 2.0]
    assert tail[0] is params[1]  # slices share the parameters
    params[0] = numdiff.full((2,), 9.0)
    assert isinstance(params[0], nn.Parameter) and float(params[0][0]) == 9.0
    assert a._data is not params[0]._data
    converted = nn.ParameterList([b])
    assert converted[0]._data is b._data  # a Parameter made from a tensor shares its storage
    assert "0" not in dir(params) and "append" in dir(params)


def test_parameter_list_bad_input_raises_like_torch():
    params = nn.ParameterList([numdiff.zeros(1)])
    with pytest.raises(IndexError, match=r"ParameterList: index 3 is out of range for length 1"):
        params[3]
    with pytest.raises(TypeError, match=r"ParameterList.extend should be called with an iterable, but got Tensor"):
        params.extend(numdiff.zeros(2))
    with pytest.raises(RuntimeError, match=r"only floating point tensors can require gradients"):  # torch's class
        nn.Parameter(numdiff.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"only floating point tensors can require gradients"):
        params.append(numdiff.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=r"ParameterList should not be called"):
        params(numdiff.zeros(1))
    with pytest.raises(TypeError, match=r"cannot assign 'str' as parameter '0'"):
        params[0] = "text"


def test_parameter_dict_operations_match_torch():
    def build(lib):
        d = lib.nn.ParameterDict(OrderedDict([("b", lib.ones(1)), ("a", lib.zeros(2))]))
        d.setdefault("c", lib.ones(3))
        d.setdefault("a", lib.ones(9))
        popped = d.pop("b")
        key, last = d.popitem()
        merged = d | lib.nn.ParameterDict({"z": lib.ones(1), "y": lib.ones(2)})
        d |= {"q": lib.zeros(1)}
        copied = d.copy()
        return {
            "keys": list(d.keys()), "merged": list(merged), "copied": list(copied), "reversed": list(reversed(d)),
            "popped": tuple(popped.shape), "popitem": (key, tuple(last.shape)), "contains": ("a" in d, "b" in d),
            "get": d.get("missing", "default"), "fromkeys": list(d.fromkeys(["u", "v"], lib.ones(1))),
            "items": [(k, tuple(v.shape)) for k, v in d.items()], "values": [tuple(v.shape) for v in d.values()],
            "shared": copied["a"] is d["a"],
        }

    assert build(numdiff) == build(torch)


def test_parameter_dict_clear_and_delete_unregister():
    parent = nn.Module()
    parent.scales = nn.ParameterDict({"a": numdiff.ones(1), "b": numdiff.ones(2)})
    del parent.scales["a"]
    assert list(parent.state_dict()) == ["scales.b"]
    parent.scales.clear()
    assert list(parent.state_dict()) == [] and len(parent.scales) == 0


def test_parameter_dict_bad_input_raises():
    d = nn.ParameterDict()
    with pytest.raises(TypeError, match=r"cannot be used as a key as it is not a string \(type is 'int'\)"):
        d[1] = numdiff.ones(1)
    with pytest.raises(KeyError, match=r"ParameterDict has no key 'x'; it has \[\]"):
        d["x"]
    with pytest.raises(TypeError, match=r"ParameterDict.update should be called with an iterable of key/value pairs, but got int"):
        d.update(3)
    with pytest.raises(ValueError, match=r"ParameterDict update sequence element #0 has length 3; 2 is required"):
        d.update([("a", numdiff.ones(1), 3)])
    with pytest.raises(TypeError, match=r"ParameterDict update sequence element #0 should be Iterable; is int"):
        d.update([5])
    with pytest.raises(RuntimeError, match=r"ParameterDict should not be called"):
        d()


def test_parameters_in_containers_train_and_load_state_dicts():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ParameterList([numdiff.randn(3, 3) * 0.3 for _ in range(2)])
            self.bias = nn.ParameterDict({"out": numdiff.zeros(3)})

        def forward(self, x):
            for w in self.layers:
                x = (x @ w).tanh()
            return x + self.bias["out"]

    numdiff.manual_seed(0)
    model = Model()
    x, y = numdiff.randn(8, 3), numdiff.randn(8, 3)
    opt = numdiff.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0]
    other = Model()
    other.load_state_dict(model.state_dict())
    np.testing.assert_array_equal(other(x).detach().numpy(), model(x).detach().numpy())
    double = model.double()
    assert double.layers[0].dtype is numdiff.float64 and double.bias["out"].dtype is numdiff.float64
