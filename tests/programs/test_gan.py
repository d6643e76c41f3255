"""A small DCGAN, written as a PyTorch program and run on numdiff. Stands for pytorch/examples'
dcgan: a transposed-convolution generator and a convolutional discriminator with BatchNorm and
LeakyReLU, weights initialised through ``model.apply``, BCELoss on labels made with ``fill_``,
two Adam optimizers with ``betas=(0.5, 0.999)``, and ``fake.detach()`` for the discriminator step.

The data are 8x8 images of one bright bar, vertical or horizontal. A bar image's variance is all
in its row means or all in its column means; an untrained generator's noise is not. The
generator must learn to draw bars: its samples' "bar score" must rise far above its start.

Run as a script (``python3 tests/programs/test_gan.py SEED``) to print the final score (the corpus runner compares it with PyTorch's).
"""

from __future__ import annotations

import sys

import numpy as np

import numdiff as torch
import numdiff.nn as nn

NZ = 8


def bars(n: int, rng: np.random.Generator):
    images = np.full((n, 1, 8, 8), -1.0, dtype=np.float32)
    where = rng.integers(0, 8, n)
    vertical = rng.random(n) < 0.5
    for i in range(n):
        if vertical[i]:
            images[i, 0, :, where[i]] = 1.0
        else:
            images[i, 0, where[i], :] = 1.0
    return torch.from_numpy(images)


def bar_score(images) -> float:
    """Mean over images of the larger share of variance held by row means or by column means."""
    x = images.detach().numpy()[:, 0].astype(np.float64)
    total = x.var(axis=(1, 2)) + 1e-12
    rows, cols = x.mean(axis=2).var(axis=1), x.mean(axis=1).var(axis=1)
    return float(np.mean(np.maximum(rows, cols) / total))


def weights_init(m):
    name = type(m).__name__
    if name.find("Conv") != -1:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif name.find("BatchNorm") != -1:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self, ngf: int = 16):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(NZ, ngf * 2, 4, 1, 0, bias=False),  # 1x1 -> 4x4
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, 1, 4, 2, 1, bias=False),  # 4x4 -> 8x8
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf: int = 16):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(1, ndf, 4, 2, 1, bias=False),  # 8x8 -> 4x4
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 3, 1, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),  # 4x4 -> 1x1
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


def train(steps: int, batch: int = 32, seed: int = 0) -> tuple[float, float]:
    """Train for `steps` batches; return the generator's bar score before and after."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    net_g, net_d = Generator(), Discriminator()
    net_g.apply(weights_init)
    net_d.apply(weights_init)
    criterion = nn.BCELoss()
    fixed_noise = torch.randn(64, NZ, 1, 1)
    optimizer_d = torch.optim.Adam(net_d.parameters(), lr=0.002, betas=(0.5, 0.999))
    optimizer_g = torch.optim.Adam(net_g.parameters(), lr=0.002, betas=(0.5, 0.999))
    with torch.no_grad():
        start = bar_score(net_g.eval()(fixed_noise))
    net_g.train()
    for _ in range(steps):
        real = bars(batch, rng)
        label = torch.full((batch,), 1.0)
        net_d.zero_grad()
        error_real = criterion(net_d(real), label)
        error_real.backward()
        fake = net_g(torch.randn(batch, NZ, 1, 1))
        label.fill_(0.0)
        error_fake = criterion(net_d(fake.detach()), label)
        error_fake.backward()
        optimizer_d.step()
        net_g.zero_grad()
        label.fill_(1.0)
        error_g = criterion(net_d(fake), label)
        error_g.backward()
        optimizer_g.step()
    with torch.no_grad():
        end = bar_score(net_g.eval()(fixed_noise))
    return start, end


def test_the_generator_learns_to_draw_bars():
    start, end = train(steps=150)
    assert start < 0.4
    assert end > 0.5  # pure bars score 1; the untrained generator's samples about 0.2
    assert end > start + 0.25


if __name__ == "__main__":
    print("RESULT", train(steps=300, seed=int(sys.argv[1]) if len(sys.argv) > 1 else 0)[1])
