"""A spatial transformer network, as in PyTorch's tutorial, written as a PyTorch program and run
on numdiff: a localisation net (conv, max-pool, ReLU, two Linears) whose last layer starts at the
identity transform, ``F.affine_grid`` and ``F.grid_sample`` with border padding, then a small
classifier, trained by SGD on NLL loss.

The first step starts at theta = identity, which puts every sampling point exactly on a pixel and
the outermost ones on the border: there PyTorch's sampler gives the coordinate no gradient, and
the localisation net's gradients hang on that. With PyTorch installed the same weights and batches
must give PyTorch's losses and parameters step for step; alone, the classifier must fit its batch.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

_rng = np.random.default_rng(61)
IMAGES = _rng.normal(size=(8, 1, 12, 12)).astype(np.float32)
LABELS = _rng.integers(0, 4, size=8)


def train(torch, steps: int, initial: dict | None = None) -> tuple[list[float], dict, dict]:
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling

    class STN(nn.Module):
        def __init__(self):
            super().__init__()
            self.localization = nn.Sequential(nn.Conv2d(1, 4, 5), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
            self.fc_loc = nn.Sequential(nn.Linear(4 * 4 * 4, 16), nn.ReLU(True), nn.Linear(16, 6))
            self.fc_loc[2].weight.data.zero_()
            self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))
            self.classifier = nn.Sequential(nn.Conv2d(1, 6, 3), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 10 * 10, 4))

        def forward(self, x):
            theta = self.fc_loc(self.localization(x).view(-1, 64)).view(-1, 2, 3)
            grid = F.affine_grid(theta, x.size(), align_corners=False)
            x = F.grid_sample(x, grid, align_corners=False, padding_mode="border")
            return F.log_softmax(self.classifier(x), dim=1)

    torch.manual_seed(0)
    model = STN()
    if initial is not None:
        model.load_state_dict({name: torch.tensor(value) for name, value in initial.items()})
    start = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    images, labels = torch.from_numpy(IMAGES), torch.from_numpy(LABELS)
    losses = []
    for _ in range(steps):
        loss = F.nll_loss(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    final = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    return losses, final, start


def test_spatial_transformer_fits_its_batch():
    losses, _, _ = train(numdiff, 25)
    assert losses[-1] < 0.5 * losses[0], losses


def test_spatial_transformer_matches_pytorch_step_for_step():
    torch = pytest.importorskip("torch")
    expected, expected_final, start = train(torch, 4)
    got, final, _ = train(numdiff, 4, start)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for name, value in expected_final.items():
        np.testing.assert_allclose(final[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


if __name__ == "__main__":
    print("RESULT", train(numdiff, 25)[0][-1])
