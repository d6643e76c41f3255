"""A patch autoencoder in the style of the ViT/MAE tutorials, written as a PyTorch program and run
on numdiff: ``nn.Unfold`` cuts overlapping patches, a Linear encodes and decodes them,
``nn.Fold`` sums them back (divided by the overlap count), and the loss adds a low-resolution
term through ``F.interpolate(..., antialias=True)``, the resize PyTorch's (and torchvision's)
downscaling uses. numdiff refused antialias=True (the seventh probe found it).

With PyTorch installed the same weights and batch must give PyTorch's losses and parameters step
for step; alone, the autoencoder must reduce its loss.

Stands for: pytorch/tutorials beginner_source/vt_tutorial.py-style patching and the resize steps of
the data-loading tutorials (transforms.Resize(antialias=True) on tensors).
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

_rng = np.random.default_rng(53)
IMAGES = _rng.normal(size=(2, 3, 8, 8)).astype(np.float32)


def train(torch, steps: int, initial: dict | None = None) -> tuple[list[float], dict, dict]:
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling
    torch.manual_seed(0)
    model = nn.ModuleDict({"encode": nn.Linear(3 * 4 * 4, 16), "decode": nn.Linear(16, 3 * 4 * 4)})
    if initial is not None:
        model.load_state_dict({name: torch.tensor(value) for name, value in initial.items()})
    start = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    unfold = nn.Unfold(kernel_size=4, stride=2, padding=1)
    fold = nn.Fold(output_size=(8, 8), kernel_size=4, stride=2, padding=1)
    overlap = fold(unfold(torch.ones(1, 3, 8, 8)))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    images = torch.from_numpy(IMAGES)
    small = F.interpolate(images, size=(3, 3), mode="bicubic", antialias=True)
    losses = []
    for _ in range(steps):
        codes = torch.relu(model["encode"](unfold(images).transpose(1, 2)))
        rebuilt = fold(model["decode"](codes).transpose(1, 2)) / overlap
        low = F.interpolate(rebuilt, scale_factor=0.5, mode="bilinear", antialias=True)
        loss = F.l1_loss(rebuilt, images) + F.mse_loss(F.interpolate(low, size=(3, 3), mode="bicubic", antialias=True), small)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    final = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    return losses, final, start


def test_patch_autoencoder_reduces_its_loss():
    losses, _, _ = train(numdiff, 30)
    assert losses[-1] < 0.7 * losses[0], losses


def test_patch_autoencoder_matches_pytorch_step_for_step():
    torch = pytest.importorskip("torch")
    expected, expected_final, start = train(torch, 4)
    got, final, _ = train(numdiff, 4, start)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for name, value in expected_final.items():
        np.testing.assert_allclose(final[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


if __name__ == "__main__":
    print("RESULT", train(numdiff, 30)[0][-1])
