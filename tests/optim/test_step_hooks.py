"""Optimizer step hooks against PyTorch: per-optimizer and global pre/post hooks, their order,
argument replacement, removal, and the refusals."""

from __future__ import annotations

import importlib
import pickle

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")


def _train(lib):
    """Two Adam steps with hooks on; returns the call log and the parameter after each step."""
    module = importlib.import_module(f"{lib.__name__}.optim.optimizer")
    w = lib.tensor([1.0, -2.0], requires_grad=True)
    opt = lib.optim.Adam([w], lr=0.1)
    log, values = [], []
    handles = [
        module.register_optimizer_step_pre_hook(lambda o, a, k: log.append("global-pre")),
        opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", len(a), sorted(k)))),
        opt.register_step_post_hook(lambda o, a, k: log.append("post")),
        module.register_optimizer_step_post_hook(lambda o, a, k: log.append("global-post")),
    ]
    for i in range(2):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
        values.append(w.detach().numpy().copy())
        if i == 0:
            handles[1].remove()
    for handle in handles:
        handle.remove()
    opt.step()
    return log, values


def test_step_hooks_run_in_torchs_order_and_leave_the_update_alone():
    ours, theirs = _train(numdiff), _train(torch)
    assert ours[0] == theirs[0]
    assert ours[0][:4] == ["global-pre", ("pre", 1, []), "post", "global-post"]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)


def test_a_pre_hook_may_replace_the_closure():
    w = numdiff.tensor([3.0], requires_grad=True)
    opt = numdiff.optim.SGD([w], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    opt.register_step_pre_hook(lambda o, args, kwargs: ((o,), {"closure": closure}))
    assert opt.step().item() == 9.0 and w.item() == 0.0  # 3 - 0.5 * 6


def test_a_pre_hook_returning_something_else_is_refused_and_hooks_are_not_pickled():
    opt = numdiff.optim.SGD([numdiff.zeros(1, requires_grad=True)], lr=0.1)
    opt.register_step_post_hook(lambda o, a, k: None)
    assert "_step_post_hooks" not in pickle.loads(pickle.dumps(opt)).__dict__
    opt.register_step_pre_hook(lambda o, a, k: "no")
    with pytest.raises(RuntimeError, match="SGD.step's pre-hook must return None or a tuple"):
        opt.step()
    with pytest.raises(TypeError, match="optimizer step hook must be callable, got int"):
        opt.register_step_post_hook(1)
