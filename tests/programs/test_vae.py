"""A variational autoencoder on scikit-learn's 8x8 digits, written as a PyTorch program and run on
numdiff (the reparameterisation trick, a Bernoulli decoder and the Gaussian KL term).

The negative ELBO per image must fall well below its start, and the reconstructions must beat the
best input-independent guess (the mean image).
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff as torch
import numdiff.nn as nn
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling

datasets = pytest.importorskip("sklearn.datasets")


class VAE(nn.Module):
    def __init__(self, pixels: int = 64, hidden: int = 128, latent: int = 8):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(pixels, hidden), nn.ReLU())
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.decoder = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, pixels))

    def encode(self, x):
        h = self.encoder(x)
        return self.mu(h), self.logvar(h)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        return mu + torch.randn_like(std) * std

    def forward(self, x):
        mu, logvar = self.encode(x)
        return self.decoder(self.reparameterize(mu, logvar)), mu, logvar


def loss_function(logits, x, mu, logvar):
    reconstruction = F.binary_cross_entropy_with_logits(logits, x, reduction="sum")
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return (reconstruction + kl) / x.shape[0]


def main(epochs: int = 15, batch_size: int = 64, seed: int = 0) -> dict:
    torch.manual_seed(seed)
    images = datasets.load_digits().data.astype(np.float32) / 16.0
    data = torch.utils.data.TensorDataset(torch.tensor(images))
    loader = torch.utils.data.DataLoader(data, batch_size=batch_size, shuffle=True)
    model = VAE()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    first_batch_loss = None
    epoch_losses = []
    for _ in range(epochs):
        model.train()
        total = 0.0
        for (x,) in loader:
            logits, mu, logvar = model(x)
            loss = loss_function(logits, x, mu, logvar)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * x.shape[0]
            first_batch_loss = first_batch_loss or loss.item()
        epoch_losses.append(total / len(data))
    model.eval()
    with torch.no_grad():
        x = torch.tensor(images)
        mu, _ = model.encode(x)
        reconstruction = torch.sigmoid(model.decoder(mu))
        error = ((reconstruction - x) ** 2).mean().item()
        baseline = ((x.mean(0, keepdim=True) - x) ** 2).mean().item()
    return {"first_batch_loss": first_batch_loss, "epoch_losses": epoch_losses, "reconstruction_mse": error, "mean_image_mse": baseline}


def test_vae_learns_digits():
    result = main()
    assert result["epoch_losses"][-1] < 0.6 * result["first_batch_loss"], result
    assert result["reconstruction_mse"] < 0.55 * result["mean_image_mse"], result


if __name__ == "__main__":
    print(main())
