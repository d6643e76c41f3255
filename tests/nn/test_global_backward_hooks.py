"""register_module_full_backward_hook / _pre_hook (on every module's backward, before the module's
own hooks) and the parameter, buffer and module registration hooks, against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")


def _shapes(grads: tuple) -> tuple:
    return tuple(None if g is None else tuple(g.shape) for g in grads)


def _train(lib):
    """Two backwards through a hooked MLP (the input without, then with, requires_grad), a third after
    the hooks are removed; returns the hook log, the parameters' and the input's gradients."""
    mm = lib.nn.modules.module
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2)).double()
    with lib.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(lib.tensor(np.linspace(-1, 1, p.numel()).reshape(p.shape) * (i + 1)))
    log = []

    def pre(module, grad_output):
        log.append(("pre", type(module).__name__, _shapes(grad_output)))
        return (grad_output[0] * 2,) if isinstance(module, lib.nn.Tanh) else None  # doubles tanh's grad_output

    def post(module, grad_input, grad_output):
        log.append(("post", type(module).__name__, _shapes(grad_input), _shapes(grad_output)))
        return (grad_input[0] * -1,) if isinstance(module, lib.nn.Sequential) and grad_input[0] is not None else None

    handles = [
        mm.register_module_full_backward_pre_hook(pre),
        mm.register_module_full_backward_hook(post),
        model[2].register_full_backward_hook(lambda m, gi, go: log.append(("own", _shapes(gi)))),
    ]
    x = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3))
    model(x).sum().backward()
    first = [p.grad.numpy().copy() for p in model.parameters()]
    xr = x.clone().requires_grad_(True)
    model(xr).pow(2).sum().backward()
    for handle in handles:
        handle.remove()
    calls = len(log)
    model(xr).sum().backward()
    assert len(log) == calls  # removed: no hook runs
    return log, first, xr.grad.numpy()


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")  # torch's warning for the input without grad
def test_global_backward_hooks_run_on_every_module_before_its_own_as_torch():
    ours, theirs = _train(numdiff), _train(torch)
    assert ours[0] == theirs[0]
    assert ours[0][:3] == [
        ("pre", "Sequential", ((2, 2),)), ("post", "Sequential", (None,), ((2, 2),)), ("pre", "Linear", ((2, 2),))
    ]
    for mine, reference in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(mine, reference, rtol=1e-12)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-12)  # the Sequential's hook negated grad_input


def test_a_global_backward_hook_with_the_wrong_gradient_count_names_the_module():
    handle = numdiff.nn.modules.module.register_module_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    try:
        x = numdiff.ones(2, 3, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"backward hook of Linear returned 2 gradients, but the module's "
                                               r"forward has 1 positional inputs"):
            numdiff.nn.Linear(3, 2)(x).sum().backward()
    finally:
        handle.remove()
    with pytest.raises(TypeError, match="hook must be callable, got int"):
        numdiff.nn.modules.module.register_module_full_backward_pre_hook(3)


def test_no_grad_calls_route_nothing():
    seen = []
    handle = numdiff.nn.modules.module.register_module_full_backward_hook(lambda *a: seen.append(a))
    try:
        with numdiff.no_grad():
            out = numdiff.nn.Linear(3, 2)(numdiff.ones(2, 3, requires_grad=True))
        assert out.grad_fn is None and seen == []
    finally:
        handle.remove()


def _register(lib):
    mm = lib.nn.modules.module
    log, replacements = [], []

    def on_parameter(module, name, param):
        log.append(("param", type(module).__name__, name, tuple(param.shape)))
        if name == "bias":
            replacements.append(lib.nn.Parameter(param.detach().clone()))
            return replacements[-1]
        return None

    def on_buffer(module, name, buffer):
        log.append(("buffer", type(module).__name__, name, None if buffer is None else tuple(buffer.shape)))

    def on_module(module, name, child):
        log.append(("module", type(module).__name__, name, type(child).__name__))
        return lib.nn.Identity() if isinstance(child, lib.nn.Dropout) else None

    handles = [mm.register_module_parameter_registration_hook(on_parameter),
               mm.register_module_buffer_registration_hook(on_buffer),
               mm.register_module_module_registration_hook(on_module)]
    model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3), lib.nn.Dropout())
    model.extra = lib.nn.Dropout()
    model.add_module("head", lib.nn.Linear(3, 1))
    model[1].running_mean = lib.zeros(3)
    model[1].register_buffer("spare", None)
    for handle in handles:
        handle.remove()
    model.after = lib.nn.Dropout()  # removed: registered as it is
    return log, (model, replacements)


def test_registration_hooks_see_and_may_replace_what_is_registered_as_torch():
    (ours, (model, replacements)), (theirs, _) = _register(numdiff), _register(torch)
    assert ours == theirs
    assert type(model[2]).__name__ == "Identity" and type(model.extra).__name__ == "Identity"
    assert type(model.after).__name__ == "Dropout"
    assert model[0].bias is replacements[0] and model.head.bias is replacements[-1] and len(replacements) == 3  # Linear, BatchNorm1d, head
