"""Optimizer.register_state_dict_pre/post_hook and register_load_state_dict_pre/post_hook, against
PyTorch: the order the hooks run in, what they see, and the dicts they return in place of the state."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")


def _round_trip(lib):
    weight = lib.nn.Parameter(lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3)))
    opt = lib.optim.Adam([weight], lr=0.1)
    (weight**2).sum().backward()
    opt.step()
    log = []
    opt.register_state_dict_pre_hook(lambda o: log.append(("pre", len(o.state))))
    opt.register_state_dict_post_hook(lambda o, sd: log.append(("post", sorted(sd))))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "note": "added"})
    opt.register_state_dict_pre_hook(lambda o: log.append(("first", None)), prepend=True)
    saved = opt.state_dict()

    fresh = lib.optim.Adam([lib.nn.Parameter(lib.zeros(2, 3, dtype=lib.float64))], lr=0.5)

    def adjust(o, sd):
        log.append(("load-pre", sd.pop("note")))
        sd["param_groups"][0]["lr"] = 0.25
        return sd

    fresh.register_load_state_dict_pre_hook(adjust)
    fresh.register_load_state_dict_post_hook(lambda o: log.append(("load-post", o.param_groups[0]["lr"])))
    fresh.load_state_dict(saved)
    exp_avg = fresh.state[fresh.param_groups[0]["params"][0]]["exp_avg"]
    return log, saved["note"] if "note" in saved else None, exp_avg.detach().numpy()


def test_state_dict_hooks_run_in_torchs_order_and_may_replace_the_dict():
    ours, theirs = _round_trip(numdiff), _round_trip(torch)
    assert ours[0] == theirs[0]
    assert ours[0] == [("first", None), ("pre", 1), ("post", ["param_groups", "state"]), ("load-pre", "added"),
                       ("load-post", 0.25)]
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-12)


def test_state_dict_hooks_are_checked_and_not_pickled():
    opt = numdiff.optim.SGD([numdiff.nn.Parameter(numdiff.ones(2))], lr=0.1)
    with pytest.raises(TypeError, match="optimizer state dict hook must be callable, got int"):
        opt.register_load_state_dict_post_hook(3)
    handle = opt.register_state_dict_post_hook(lambda o, sd: {"state": {}, "param_groups": []})
    assert opt.state_dict() == {"state": {}, "param_groups": []}
    restored = pickle.loads(pickle.dumps(opt))
    assert restored.state_dict()["param_groups"][0]["lr"] == 0.1  # the hook stayed behind
    handle.remove()
    assert opt.state_dict()["param_groups"][0]["lr"] == 0.1


def test_loading_something_other_than_a_state_dict_names_its_type():
    opt = numdiff.optim.SGD([numdiff.nn.Parameter(numdiff.ones(2))], lr=0.1)
    with pytest.raises(ValueError, match="'state' and 'param_groups', got numdiff.Tensor"):
        opt.load_state_dict(numdiff.ones(2))
