"""A mixture density network, written as a PyTorch program and run on numdiff: an inverted sine
(one x, up to three y) that a mean-squared-error fit can only average, fitted by a network whose
heads give a mixture's logits, means and log-scales, read as
``MixtureSameFamily(Categorical(logits=...), Normal(mu, sigma))`` and trained on its negative
``log_prob`` with Adam; sampling from the fitted mixture under ``no_grad``.

The negative log-likelihood must fall well below one Gaussian's, and with PyTorch installed the
same weights must give PyTorch's losses step for step.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

COMPONENTS, STEPS = 3, 60
_rng = np.random.default_rng(41)
_y = _rng.uniform(-1.0, 1.0, size=(256, 1))
X = (np.sin(3.0 * _y) + 0.1 * _rng.normal(size=_y.shape)).astype(np.float32)  # x from y: y is multi-valued
Y = _y.astype(np.float32)


def train(torch, initial: dict | None = None) -> tuple[list[float], dict, tuple]:
    nn = torch.nn
    dist = torch.distributions

    class MDN(nn.Module):
        def __init__(self, hidden: int = 32):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(1, hidden), nn.Tanh())
            self.heads = nn.ModuleDict({
                "logits": nn.Linear(hidden, COMPONENTS),
                "mu": nn.Linear(hidden, COMPONENTS),
                "log_sigma": nn.Linear(hidden, COMPONENTS),
            })  # fmt: skip

        def forward(self, x):
            h = self.body(x)
            sigma = self.heads["log_sigma"](h).clamp(-5.0, 2.0).exp()
            components = dist.Normal(self.heads["mu"](h), sigma)
            return dist.MixtureSameFamily(dist.Categorical(logits=self.heads["logits"](h)), components)

    torch.manual_seed(0)
    model = MDN()
    if initial is not None:
        model.load_state_dict({name: torch.tensor(value) for name, value in initial.items()})
    start = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    x, y = torch.from_numpy(X), torch.from_numpy(Y)
    losses = []
    for _ in range(STEPS):
        loss = -model(x).log_prob(y.squeeze(1)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        mixture = model(x[:4])
        draws = mixture.sample((5,))
    return losses, start, (tuple(draws.shape), mixture.mean.numpy(), mixture.variance.numpy())


def test_mixture_density_network_beats_one_gaussian():
    losses, _, (draw_shape, mean, variance) = train(numdiff)
    one_gaussian = 0.5 * np.log(2 * np.pi * np.e * Y.var())  # the best single-Gaussian NLL
    assert losses[-1] < one_gaussian - 0.3, (losses[-1], one_gaussian)
    assert draw_shape == (5, 4) and mean.shape == variance.shape == (4,) and np.all(variance > 0)


def test_mixture_density_losses_match_pytorch():
    torch = pytest.importorskip("torch")
    expected, start, (_, mean, variance) = train(torch)
    got, _, (_, our_mean, our_variance) = train(numdiff, start)
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(our_mean, mean, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(our_variance, variance, rtol=1e-3, atol=1e-4)


if __name__ == "__main__":
    print("RESULT", train(numdiff)[0][-1])
