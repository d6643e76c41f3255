"""A small CNN with a BatchNorm after its conv and after its Linear, trained a few steps, then
prepared for inference as PyTorch's fusion recipes do: ``torch.nn.utils.fusion`` folds each
eval-mode BatchNorm into the layer before it, and the fused model must give the unfused one's
outputs. numdiff had no ``nn.utils.fusion`` module (the seventh probe found it).

With PyTorch installed the same weights and batch must give PyTorch's losses, fused parameters
and outputs; alone, the fused model must reproduce the unfused one.

Stands for: pytorch/tutorials intermediate_source/fx_conv_bn_fuser.py (which folds Conv-BN pairs
with fuse_conv_bn_eval before deployment), done here by hand on a Sequential.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import numdiff

_rng = np.random.default_rng(52)
IMAGES = _rng.normal(size=(8, 3, 8, 8)).astype(np.float32)
LABELS = _rng.integers(0, 4, size=8)


def train_and_fuse(torch, steps: int, initial: dict | None = None):
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling
    fusion = torch.nn.utils.fusion

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
        nn.Linear(24, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 4),
    )  # fmt: skip
    if initial is not None:
        model.load_state_dict({name: torch.tensor(value) for name, value in initial.items()})
    start = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images, labels = torch.from_numpy(IMAGES), torch.from_numpy(LABELS)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    fused = copy.deepcopy(model)
    fused[0] = fusion.fuse_conv_bn_eval(model[0], model[1])
    fused[1] = nn.Identity()
    fused[5] = fusion.fuse_linear_bn_eval(model[5], model[6])
    fused[6] = nn.Identity()
    with torch.no_grad():
        outputs = (model(images).numpy(), fused(images).numpy())
    parameters = {name: value.detach().numpy().copy() for name, value in fused.state_dict().items()}
    return losses, outputs, parameters, start


def test_the_fused_model_gives_the_unfused_models_outputs():
    _, (unfused, fused), parameters, _ = train_and_fuse(numdiff, 3)
    np.testing.assert_allclose(fused, unfused, rtol=1e-4, atol=1e-5)
    assert sorted(parameters) == ["0.bias", "0.weight", "5.bias", "5.weight", "8.bias", "8.weight"]


def test_fusion_matches_pytorch():
    torch = pytest.importorskip("torch")
    expected_losses, expected_outputs, expected_parameters, start = train_and_fuse(torch, 3)
    losses, outputs, parameters, _ = train_and_fuse(numdiff, 3, start)
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-5)
    for got, expected in zip(outputs, expected_outputs):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    for name, value in expected_parameters.items():
        np.testing.assert_allclose(parameters[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


if __name__ == "__main__":
    print("RESULT", train_and_fuse(numdiff, 3)[0][-1])
