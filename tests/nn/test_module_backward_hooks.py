"""Module.register_full_backward_hook and register_full_backward_pre_hook against torch: what the
hooks see (Grad-CAM reads a conv layer's grad_output), replacing grad_input and grad_output,
modules with several and with non-tensor inputs, a module called twice in one graph, inputs that
need no gradient, removal, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(3)
IMAGES = _rng.normal(size=(2, 1, 6, 6))


def _net(lib):
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Conv2d(1, 3, 3), lib.nn.ReLU(), lib.nn.Flatten(), lib.nn.Linear(48, 4)).double()
    weights = np.random.default_rng(4)
    with lib.no_grad():
        for p in net.parameters():
            p.copy_(lib.tensor(weights.normal(size=tuple(p.shape))))
    return net


def _grad_cam(lib, replace_grad_input: bool):
    net = _net(lib)
    seen = {}
    net[0].register_forward_hook(lambda m, args, out: seen.__setitem__("activation", out.detach()))
    net[0].register_full_backward_hook(lambda m, gi, go: seen.__setitem__("grad_output", go[0]))
    net[3].register_full_backward_pre_hook(lambda m, go: (go[0] * 0.5,))
    if replace_grad_input:
        net[2].register_full_backward_hook(lambda m, gi, go: (gi[0].clamp(-0.1, 0.1),))
    x = lib.tensor(IMAGES, requires_grad=True)
    scores = net(x)
    scores[:, 1].sum().backward()
    weights = seen["grad_output"].mean(dim=(2, 3), keepdim=True)
    cam = (weights * seen["activation"]).sum(1).relu()
    return [cam, x.grad, *(p.grad for p in net.parameters())]


@pytest.mark.parametrize("replace_grad_input", [False, True])
def test_grad_cam_hooks_see_and_replace_what_torch_s_do(replace_grad_input):
    for ours, theirs in zip(_grad_cam(numdiff, replace_grad_input), _grad_cam(torch, replace_grad_input)):
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-14)


def _two_inputs(lib, calls: list):
    class Mix(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = lib.nn.Parameter(lib.tensor([1.5, -0.5], dtype=lib.float64))

        def forward(self, a, power, b):
            return (a * self.scale) ** power + b, a - b

    mix = Mix()
    mix.register_full_backward_hook(lambda m, gi, go: calls.append([None if g is None else g.numpy().copy() for g in gi + go]))
    a = lib.tensor([0.3, 2.0], dtype=lib.float64, requires_grad=True)
    b = lib.tensor([1.0, -1.0], dtype=lib.float64)  # needs no gradient: its grad_input entry is None
    first, second = mix(a, 2, b)
    third, _ = mix(first, 3, b)  # the module twice in one graph: the hook runs once per call
    (third.sum() + second.sum()).backward()
    return [a.grad.numpy(), mix.scale.grad.numpy()]


def test_several_inputs_non_tensor_arguments_and_repeated_calls_match_torch():
    ours_calls, theirs_calls = [], []
    ours = _two_inputs(numdiff, ours_calls)
    theirs = _two_inputs(torch, theirs_calls)
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert len(ours_calls) == len(theirs_calls) == 2
    for got_call, want_call in zip(ours_calls, theirs_calls):
        assert len(got_call) == len(want_call)  # one grad_input per positional argument, one grad_output per output
        for got, want in zip(got_call, want_call):
            # A gradient that is zero by absence: PyTorch passes None for an unused output and zeros
            # for an input that needs none; numdiff the other way round. Both mean zero.
            got = 0.0 if got is None else got
            want = 0.0 if want is None else want
            np.testing.assert_allclose(np.broadcast_to(got, np.shape(want) or np.shape(got)), want, rtol=1e-12)


def test_hooks_fire_with_none_grad_input_when_no_input_needs_grad_and_stop_when_removed():
    layer = numdiff.nn.Linear(3, 2)
    calls = []
    handle = layer.register_full_backward_hook(lambda m, gi, go: calls.append((gi, tuple(go[0].shape))))
    layer(numdiff.ones(4, 3)).sum().backward()
    assert calls == [((None,), (4, 2))]
    handle.remove()
    layer(numdiff.ones(4, 3)).sum().backward()
    with numdiff.no_grad():
        layer(numdiff.ones(4, 3))
    assert len(calls) == 1


def test_a_hook_returning_the_wrong_number_of_gradients_is_refused_by_name():
    layer = numdiff.nn.Linear(3, 2)
    layer.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    out = layer(numdiff.ones(1, 3, requires_grad=True)).sum()
    with pytest.raises(RuntimeError, match="backward hook of Linear returned 2 gradients, but the module's forward has 1 positional inputs"):
        out.backward()
    with pytest.raises(TypeError, match="hook must be callable, got int"):
        layer.register_full_backward_pre_hook(3)
