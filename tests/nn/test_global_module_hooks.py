"""register_module_forward_pre_hook / register_module_forward_hook: hooks on every module's call,
in PyTorch's order (global before the module's own) and with its return contracts."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

WEIGHTS = np.random.default_rng(0).uniform(-0.5, 0.5, (4, 3))


def _run(lib):
    """Call a Sequential with global and per-module hooks on; returns the output and the call log."""
    mm = lib.nn.modules.module
    model = lib.nn.Sequential(lib.nn.Linear(3, 4, bias=False), lib.nn.ReLU())
    with lib.no_grad():
        model[0].weight.copy_(lib.tensor(WEIGHTS, dtype=lib.float32))
    log = []
    handles = [
        mm.register_module_forward_pre_hook(lambda m, args: log.append(("global-pre", type(m).__name__))),
        model[0].register_forward_pre_hook(lambda m, args: log.append(("pre", type(m).__name__))),
        model[0].register_forward_hook(lambda m, args, out: log.append(("post", type(m).__name__))),
        # Doubles every Linear's output: replacing the output, as a per-module hook may.
        mm.register_module_forward_hook(lambda m, args, out: out * 2 if isinstance(m, lib.nn.Linear) else None),
        mm.register_module_forward_hook(lambda m, args, kwargs, out: log.append(("kw", sorted(kwargs))), with_kwargs=True),
    ]
    out = model(lib.ones(2, 3))
    for handle in handles:
        handle.remove()
    return out, log, model(lib.ones(2, 3))


def test_global_hooks_run_before_the_modules_own_and_replace_outputs_as_torch():
    ours, our_log, our_after = _run(numdiff)
    theirs, their_log, their_after = _run(torch)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6)
    assert our_log == their_log
    assert our_log[:2] == [("global-pre", "Sequential"), ("global-pre", "Linear")]
    np.testing.assert_allclose(our_after.detach().numpy(), their_after.detach().numpy(), rtol=1e-6)  # removed: no doubling
    np.testing.assert_allclose(ours.detach().numpy(), 2 * our_after.detach().numpy(), rtol=1e-6)


def test_global_pre_hook_may_replace_the_inputs_and_always_call_runs_on_error():
    mm = numdiff.nn.modules.module
    seen = []
    pre = mm.register_module_forward_pre_hook(lambda m, args: (args[0] + 1,))
    post = mm.register_module_forward_hook(lambda m, args, kwargs, out: seen.append(out), with_kwargs=True,
                                           always_call=True)
    try:
        assert numdiff.nn.Identity()(numdiff.zeros(2)).tolist() == [1.0, 1.0]
        with pytest.raises(ValueError, match=r"expected input of shape \(\*, 3\), got \(2, 5\)"):
            numdiff.nn.Linear(3, 2)(numdiff.zeros(2, 5))
    finally:
        pre.remove()
        post.remove()
    assert len(seen) == 2 and seen[1] is None  # the failed call's hook saw no output
    assert not numdiff.nn.modules._module_hooks.forward_hooks


def test_a_global_hook_that_is_not_callable_is_refused():
    with pytest.raises(TypeError, match="hook must be callable, got int"):
        numdiff.nn.modules.module.register_module_forward_hook(3)
