"""A VQ-VAE, written as a PyTorch program and run on numdiff. Stands for the VQ-VAE tutorials: a
convolutional encoder, a codebook (``nn.Embedding``) searched by squared distance (``argmin``
over ``|z|^2 - 2 z.e + |e|^2``), the straight-through estimator ``z + (z_q - z).detach()`` that
copies the decoder's gradient past the quantiser, codebook and commitment losses with
``detach``, codebook usage counted by ``bincount``, a ``ConvTranspose2d`` decoder, Adam.

The data are our own: two batches of 8x8 three-channel images of smooth random gradients, seen in turn. The reconstruction
loss must fall, and with PyTorch installed the same weights and images must give PyTorch's losses
and code choices step for step.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

CODES, CODE_DIM, BATCH, STEPS, BATCHES = 16, 8, 8, 16, 2
_rng = np.random.default_rng(91)
_ramp = np.linspace(-1, 1, 8, dtype=np.float32)
_slopes = _rng.normal(size=(BATCHES, BATCH, 3, 2)).astype(np.float32)
IMAGES = _slopes[..., 0, None, None] * _ramp[:, None] + _slopes[..., 1, None, None] * _ramp[None, :]


def train(torch, initial: dict | None = None) -> tuple[list[float], list[list[int]], dict]:
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling

    class Quantiser(nn.Module):
        def __init__(self):
            super().__init__()
            self.codebook = nn.Embedding(CODES, CODE_DIM)
            self.codebook.weight.data.uniform_(-1 / CODES, 1 / CODES)

        def forward(self, z):
            b, d, h, w = z.shape
            flat = z.permute(0, 2, 3, 1).reshape(-1, d)
            book = self.codebook.weight
            distances = flat.pow(2).sum(1, keepdim=True) - 2 * flat @ book.t() + book.pow(2).sum(1)
            codes = distances.argmin(dim=1)
            quantised = self.codebook(codes).view(b, h, w, d).permute(0, 3, 1, 2)
            loss = F.mse_loss(quantised, z.detach()) + 0.25 * F.mse_loss(z, quantised.detach())
            return z + (quantised - z).detach(), loss, torch.bincount(codes, minlength=CODES)

    model = nn.ModuleDict({
        "encoder": nn.Sequential(nn.Conv2d(3, 16, 4, 2, 1), nn.ReLU(), nn.Conv2d(16, CODE_DIM, 3, 1, 1)),
        "quantiser": Quantiser(),
        "decoder": nn.Sequential(nn.ConvTranspose2d(CODE_DIM, 16, 4, 2, 1), nn.ReLU(), nn.Conv2d(16, 3, 3, 1, 1)),
    })
    torch.manual_seed(0)
    start = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    if initial is not None:
        model.load_state_dict({k: torch.tensor(v) for k, v in initial.items()})
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses, usage = [], []
    for step in range(STEPS):
        x = torch.from_numpy(IMAGES[step % BATCHES])
        quantised, vq_loss, counts = model["quantiser"](model["encoder"](x))
        reconstruction = F.mse_loss(model["decoder"](quantised), x)
        loss = reconstruction + vq_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(reconstruction.item())
        usage.append(counts.tolist())
    return losses, usage, start


def test_vqvae_reconstruction_loss_falls_through_the_straight_through_estimator():
    losses, usage, _ = train(numdiff)
    assert sum(losses[-2:]) < 0.8 * sum(losses[:2]), losses  # the same two batches, first and last seen
    assert all(sum(u) == BATCH * 16 for u in usage)  # every 4x4 latent position picks one code


def test_vqvae_matches_pytorch_step_for_step():
    torch = pytest.importorskip("torch")
    expected, expected_usage, start = train(torch)
    got, usage, _ = train(numdiff, start)
    assert usage == expected_usage
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


if __name__ == "__main__":
    print("RESULT", train(numdiff)[0][-1])
