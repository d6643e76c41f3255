"""Module state_dict hooks and extra state against PyTorch: the same hooks on the same model give
the same keys, values, call order and IncompatibleKeys in both libraries."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")


def _model(lib):
    class Scaled(lib.nn.Module):
        """A layer with a Python value saved through get_extra_state."""

        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(2, 2)
            self.scale = 1.5

        def forward(self, x):
            return self.fc(x) * self.scale

        def get_extra_state(self):
            return {"scale": self.scale}

        def set_extra_state(self, state):
            self.scale = state["scale"]

    model = lib.nn.Sequential(Scaled(), lib.nn.ReLU())
    with lib.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(lib.arange(p.numel(), dtype=lib.float32).reshape(p.shape) * 0.1 + i)
    return model


def _save_and_load(lib):
    model, log = _model(lib), []
    model.register_state_dict_pre_hook(lambda m, prefix, keep_vars: log.append(("pre", prefix, keep_vars)))
    model[0].register_state_dict_post_hook(lambda m, sd, prefix, meta: sd.__setitem__(prefix + "added", lib.ones(1)))
    state = model.state_dict()
    keys = list(state)
    state["0._extra_state"] = {"scale": 3.0}
    state["0.old_name"] = state.pop("0.fc.bias")  # an old checkpoint's key, renamed back by a pre-hook

    def rename(m, sd, prefix, meta, strict, missing, unexpected, errors):
        log.append(("load-pre", prefix))
        if prefix + "old_name" in sd:
            sd[prefix + "fc.bias"] = sd.pop(prefix + "old_name")

    def excuse(m, incompatible):
        log.append(("load-post", sorted(incompatible.unexpected_keys)))
        incompatible.unexpected_keys.remove("0.added")

    fresh = _model(lib)
    fresh[0].register_load_state_dict_pre_hook(rename)
    fresh[0].register_load_state_dict_post_hook(excuse)
    result = fresh.load_state_dict(state)  # strict: the post-hook excused the one unexpected key
    out = fresh(lib.ones(1, 2))
    return keys, log, result, fresh[0].scale, out.detach().numpy(), "0.old_name" in state


def test_state_dict_and_load_hooks_and_extra_state_match_torch():
    ours, theirs = _save_and_load(numdiff), _save_and_load(torch)
    assert ours[0] == theirs[0] == ["0._extra_state", "0.fc.weight", "0.fc.bias", "0.added"]  # own state first
    assert ours[1] == theirs[1]
    assert list(ours[2].missing_keys) == list(theirs[2].missing_keys) == []
    assert list(ours[2].unexpected_keys) == list(theirs[2].unexpected_keys) == []
    assert ours[3] == theirs[3] == 3.0
    np.testing.assert_allclose(ours[4], theirs[4], rtol=1e-6)
    assert ours[5] and theirs[5]  # the hooks edited a copy: the caller's dict is unchanged


def test_strict_load_still_refuses_keys_a_post_hook_leaves():
    model = _model(numdiff)
    model.register_load_state_dict_post_hook(lambda m, keys: None)
    state = model.state_dict()
    state["stray"] = numdiff.zeros(1)
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "stray"'):
        model.load_state_dict(state)
    assert model.load_state_dict(state, strict=False).unexpected_keys == ["stray"]


def test_a_load_pre_hook_can_refuse_through_error_msgs():
    model = numdiff.nn.Linear(2, 1)
    model.register_load_state_dict_pre_hook(lambda m, sd, prefix, meta, strict, mk, uk, errors: errors.append("too old"))
    with pytest.raises(RuntimeError, match="Error\\(s\\) in loading state_dict for Linear:\n\ttoo old"):
        model.load_state_dict(model.state_dict())


def test_a_state_dict_post_hook_that_returns_a_value_is_refused_as_torch_refuses_it():
    model = numdiff.nn.Linear(2, 1)
    model.register_state_dict_post_hook(lambda m, sd, prefix, meta: sd)
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        model.state_dict()
    with pytest.raises(TypeError, match="hook must be callable, got str"):
        model.register_load_state_dict_pre_hook("not a hook")


def test_a_module_without_get_extra_state_saves_no_extra_key():
    assert "_extra_state" not in "".join(numdiff.nn.Linear(2, 1).state_dict())
    with pytest.raises(RuntimeError, match="override get_extra_state"):
        numdiff.nn.Linear(2, 1).get_extra_state()
