"""A small padded-sequence classifier trained as a notebook would: masked attention pooling over
a batch holding an all-padding row (its softmax is NaN and is zeroed with where), activation
statistics from a global forward hook, a weight EMA updated from an optimizer post-step hook, a
layer that saves a Python setting as extra state, gradient norms logged with get_total_norm before
clipping, and a resume from a checkpoint whose old key names a load pre-hook renames. Written as a
PyTorch program; run on numdiff and on torch from the same weights, every number compared.
"""

from __future__ import annotations

import importlib
import io

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
TOKENS = RNG.standard_normal((6, 5, 4)).astype(np.float32)
LENGTHS = np.array([5, 3, 0, 2, 4, 1])  # the third sequence is all padding
LABELS = np.array([0, 1, 1, 0, 1, 0])


def program(lib):
    nn, F = lib.nn, lib.nn.functional  # noqa: N806 - the usual PyTorch spelling
    hooks = importlib.import_module(f"{lib.__name__}.nn.modules.module")
    step_hooks = importlib.import_module(f"{lib.__name__}.optim.optimizer")

    class Pool(nn.Module):
        def __init__(self):
            super().__init__()
            self.score = nn.Linear(4, 1, bias=False)  # a bias shifts every score alike: no gradient
            self.temperature = 1.0

        def forward(self, x, pad):
            s = (self.score(x).squeeze(-1) / self.temperature).masked_fill(pad, float("-inf"))
            w = F.softmax(s, dim=1)
            w = lib.where(lib.isnan(w), lib.zeros_like(w), w)  # an all-padding row pools to zero
            return (w.unsqueeze(-1) * x).sum(1)

        def get_extra_state(self):
            return {"temperature": self.temperature}

        def set_extra_state(self, state):
            self.temperature = state["temperature"]

    def make():
        model = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
        model.pool, model.head = Pool(), nn.Linear(4, 2)
        with lib.no_grad():
            for i, (_, p) in enumerate(sorted(model.named_parameters())):
                p.copy_(lib.tensor(np.random.default_rng(i).uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
        return model

    def forward(model, x, pad):
        return model.head(model.pool(model[1](model[0](x)), pad))

    x, pad = lib.tensor(TOKENS), lib.tensor(np.arange(5)[None] >= LENGTHS[:, None])
    y = lib.tensor(LABELS)
    model = make()
    model.pool.temperature = 0.5
    opt = lib.optim.Adam(model.parameters(), lr=0.05)
    ema = [p.detach().clone() for p in model.parameters()]

    def update_ema(optimizer, args, kwargs):
        with lib.no_grad():
            for e, p in zip(ema, model.parameters()):
                e.mul_(0.9).add_(p.detach(), alpha=0.1)

    means = []
    act = hooks.register_module_forward_hook(
        lambda m, inputs, output: means.append(float(output.detach().mean())) if isinstance(m, nn.Tanh) else None)
    post = step_hooks.register_optimizer_step_post_hook(update_ema)
    record = {"loss": [], "norm": []}
    try:
        for _ in range(4):
            opt.zero_grad()
            loss = F.cross_entropy(forward(model, x, pad), y)
            loss.backward()
            grads = [p.grad for p in model.parameters()]
            record["norm"].append(float(nn.utils.get_total_norm(grads)))
            nn.utils.clip_grads_with_norm_(model.parameters(), 0.5, nn.utils.get_total_norm(grads))
            opt.step()
            record["loss"].append(loss.item())
    finally:
        act.remove()
        post.remove()
    record["means"], record["ema"] = means, [e.numpy().copy() for e in ema]
    record["pool_grad"] = model.pool.score.weight.grad.numpy().copy()

    state = model.state_dict()
    state["pool.scorer.weight"] = state.pop("pool.score.weight")  # the old name a checkpoint still uses
    buffer = io.BytesIO()
    lib.save({"model": state, "opt": opt.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = lib.load(buffer)
    resumed = make()

    def rename(module, sd, prefix, *rest):
        if prefix + "scorer.weight" in sd:
            sd[prefix + "score.weight"] = sd.pop(prefix + "scorer.weight")

    resumed.pool.register_load_state_dict_pre_hook(rename)
    resumed.load_state_dict(checkpoint["model"])
    opt2 = lib.optim.Adam(resumed.parameters(), lr=0.05)
    opt2.load_state_dict(checkpoint["opt"])
    for m, o in ((model, opt), (resumed, opt2)):
        o.zero_grad()
        F.cross_entropy(forward(m, x, pad), y).backward()
        o.step()
    record["temperature"] = resumed.pool.temperature
    record["after"] = [p.detach().numpy().copy() for p in model.parameters()]
    record["resumed"] = [p.detach().numpy().copy() for p in resumed.parameters()]
    return record


def test_hooked_training_matches_torch_and_resumes_exactly():
    ours, theirs = program(numdiff), program(torch)
    for key in ("loss", "norm", "means"):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=2e-5, atol=1e-6, err_msg=key)
    for a, b in zip(ours["ema"], theirs["ema"]):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)
    assert np.isfinite(ours["pool_grad"]).all()  # the all-padding row sends no NaN back
    np.testing.assert_allclose(ours["pool_grad"], theirs["pool_grad"], rtol=2e-5, atol=1e-6)
    assert ours["temperature"] == theirs["temperature"] == 0.5  # restored from the extra state
    for a, b in zip(ours["after"], ours["resumed"]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(ours["after"], theirs["after"]):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)
