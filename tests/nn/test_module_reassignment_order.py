"""Replacing a registered layer or parameter keeps its place, as in PyTorch: programs rely on the
order (pytorch/examples' siamese_network swaps resnet.conv1, then drops the last child with
``list(resnet.children())[:-1]``)."""

import pytest

import numdiff

torch = pytest.importorskip("torch")


def _build(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = lib.nn.Conv2d(3, 4, 3)
            self.act = lib.nn.ReLU()
            self.scale = lib.nn.Parameter(lib.ones(1))
            self.fc = lib.nn.Linear(4, 2)
            self.shift = lib.nn.Parameter(lib.zeros(1))

    net = Net()
    net.conv1 = lib.nn.Conv2d(1, 4, 3)  # replaced after construction
    net.scale = lib.nn.Parameter(lib.ones(2))
    return net


def test_replacing_a_child_or_a_parameter_keeps_pytorchs_order():
    ours, theirs = _build(numdiff), _build(torch)
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()] == ["conv1", "act", "fc"]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    trunk = numdiff.nn.Sequential(*list(ours.children())[:-1])
    assert isinstance(trunk[0], numdiff.nn.Conv2d) and trunk[0].in_channels == 1
