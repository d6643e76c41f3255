"""A denoising diffusion model (DDPM), written as a PyTorch program and run on numdiff. Stands for
the diffusion tutorials' training loop: a linear beta schedule with ``cumprod`` for the signal
level, timesteps drawn per image and their levels read with ``gather``, sinusoidal timestep
embeddings, a small U-Net (GroupNorm, SiLU, a time embedding added per channel, average-pool down,
nearest ``interpolate`` up, a skip connection by ``cat``) that predicts the added noise under
``mse_loss``, ``clip_grad_norm_``, then reverse steps of ancestral sampling under ``no_grad``.

The data are our own: 8x8 images of one bright square at a random place. The loss must fall, and
with PyTorch installed the same weights, timesteps and noise must give PyTorch's losses and
samples.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import numdiff

T_STEPS, BATCH, SIZE, STEPS = 40, 8, 8, 10
_rng = np.random.default_rng(81)
CORNERS = _rng.integers(0, SIZE - 3, size=(STEPS, BATCH, 2))
IMAGES = -np.ones((STEPS, BATCH, 1, SIZE, SIZE), np.float32)
for s in range(STEPS):
    for b, (r, c) in enumerate(CORNERS[s]):
        IMAGES[s, b, 0, r:r + 3, c:c + 3] = 1.0
TIMES = _rng.integers(0, T_STEPS, size=(STEPS, BATCH))
NOISE = _rng.normal(size=(STEPS, BATCH, 1, SIZE, SIZE)).astype(np.float32)
SAMPLE_NOISE = _rng.normal(size=(4, 2, 1, SIZE, SIZE)).astype(np.float32)


def train(torch, initial: dict | None = None) -> tuple[list[float], np.ndarray, dict]:
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling
    betas = torch.linspace(1e-4, 0.05, T_STEPS)
    alphas = 1.0 - betas
    alpha_bar = torch.cumprod(alphas, dim=0)

    def timestep_embedding(t, dim=16):
        freqs = torch.exp(-math.log(10000.0) * torch.arange(dim // 2, dtype=torch.float32) / (dim // 2))
        angles = t.float()[:, None] * freqs[None]
        return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)

    class Block(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(cin, cout, 3, padding=1), nn.Conv2d(cout, cout, 3, padding=1)
            self.norm1, self.norm2 = nn.GroupNorm(4, cout), nn.GroupNorm(4, cout)
            self.time = nn.Linear(16, cout)
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x, emb):
            h = F.silu(self.norm1(self.conv1(x))) + self.time(emb)[:, :, None, None]
            return F.silu(self.norm2(self.conv2(h))) + self.skip(x)

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Sequential(nn.Linear(16, 16), nn.SiLU(), nn.Linear(16, 16))
            self.down, self.mid, self.up = Block(1, 8), Block(8, 16), Block(24, 8)
            self.out = nn.Conv2d(8, 1, 1)

        def forward(self, x, t):
            emb = self.embed(timestep_embedding(t))
            d = self.down(x, emb)
            m = self.mid(F.avg_pool2d(d, 2), emb)
            return self.out(self.up(torch.cat([F.interpolate(m, scale_factor=2, mode="nearest"), d], 1), emb))

    torch.manual_seed(0)
    model = UNet()
    start = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    if initial is not None:
        model.load_state_dict({k: torch.tensor(v) for k, v in initial.items()})
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for step in range(STEPS):
        x0, t, noise = (torch.from_numpy(a[step]) for a in (IMAGES, TIMES, NOISE))
        level = alpha_bar.gather(0, t).view(-1, 1, 1, 1)
        xt = level.sqrt() * x0 + (1 - level).sqrt() * noise
        loss = F.mse_loss(model(xt, t), noise)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        x = torch.from_numpy(SAMPLE_NOISE[0])
        for i, t in enumerate(range(T_STEPS - 1, T_STEPS - 4, -1)):
            eps = model(x, torch.full((2,), t, dtype=torch.long))
            mean = (x - betas[t] / (1 - alpha_bar[t]).sqrt() * eps) / alphas[t].sqrt()
            x = mean + betas[t].sqrt() * torch.from_numpy(SAMPLE_NOISE[i + 1])
    return losses, x.numpy(), start


def test_ddpm_noise_prediction_loss_falls():
    losses, sample, _ = train(numdiff)
    assert np.mean(losses[-3:]) < 0.8 * np.mean(losses[:3]), losses
    assert np.isfinite(sample).all()


def test_ddpm_matches_pytorch_step_for_step():
    torch = pytest.importorskip("torch")
    expected, expected_sample, start = train(torch)
    got, sample, _ = train(numdiff, start)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sample, expected_sample, rtol=1e-3, atol=1e-4)


if __name__ == "__main__":
    print("RESULT", train(numdiff)[0][-1])
