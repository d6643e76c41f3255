"""A SimCLR-style contrastive loop, written as a PyTorch program and run on numdiff: two noisy
views of each point through one encoder (Linear, LayerNorm, ReLU, Linear), embeddings
``F.normalize``d, a similarity matrix divided by a temperature whose diagonal is masked with
``fill_diagonal_(-inf)`` after the division (the step that once failed backward), NT-Xent as
``cross_entropy`` against the partner's index, SGD with weight decay and ``CosineAnnealingLR``.

The loss must fall, and with PyTorch installed the same weights and views must give PyTorch's
losses step for step.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

POINTS, FEATURES, STEPS = 16, 12, 8
_rng = np.random.default_rng(31)
DATA = _rng.normal(size=(POINTS, FEATURES)).astype(np.float32)
NOISE = (0.2 * _rng.normal(size=(STEPS, 2, POINTS, FEATURES))).astype(np.float32)


def nt_xent(torch, z1, z2, temperature: float = 0.5):
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling
    z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
    similarity = z @ z.T / temperature
    similarity.fill_diagonal_(float("-inf"))  # a point is not its own positive
    n = z1.shape[0]
    partners = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(similarity, partners)


def train(torch, initial: dict | None = None) -> tuple[list[float], dict]:
    nn = torch.nn
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(FEATURES, 32), nn.LayerNorm(32), nn.ReLU(), nn.Linear(32, 8))
    if initial is not None:
        encoder.load_state_dict({name: torch.tensor(value) for name, value in initial.items()})
    start = {name: value.detach().numpy().copy() for name, value in encoder.state_dict().items()}
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.2, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=STEPS)
    x = torch.from_numpy(DATA)
    losses = []
    for step in range(STEPS):
        view_1 = x + torch.from_numpy(NOISE[step, 0])
        view_2 = x * 0.9 + torch.from_numpy(NOISE[step, 1])
        loss = nt_xent(torch, encoder(view_1), encoder(view_2))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses, start


def test_contrastive_loss_falls():
    losses, _ = train(numdiff)
    assert losses[-1] < 0.8 * losses[0], losses


def test_contrastive_losses_match_pytorch():
    torch = pytest.importorskip("torch")
    expected, start = train(torch)
    got, _ = train(numdiff, start)
    np.testing.assert_allclose(got, expected, rtol=1e-4)


if __name__ == "__main__":
    print("RESULT", train(numdiff)[0][-1])
