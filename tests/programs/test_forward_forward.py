"""Hinton's forward-forward algorithm, written as a PyTorch program and run on numdiff. Stands
for pytorch/examples' mnist_forward_forward: no gradient crosses a layer boundary. Each layer
has its own Adam optimizer and learns, from its own ``.detach()``-ed input, to give high
"goodness" (mean squared activation) to images carrying their true label and low goodness to
images carrying a wrong one; the label is written into the first pixels. A class is predicted by
trying every label and summing the layers' goodness.

Data: scikit-learn's 8x8 digits. The test error must fall far below chance (0.9).

Run as a script (``python3 tests/programs/test_forward_forward.py SEED``) to print the test
error (the corpus runner compares it with PyTorch's).
"""

from __future__ import annotations

import sys

import pytest

import numdiff as torch
import numdiff.nn as nn

datasets = pytest.importorskip("sklearn.datasets")


def overlay_label(x, y):
    """Copy of x whose first 10 pixels are zero except pixel y, set to the image maximum."""
    x_ = x.clone()
    x_[:, :10] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Layer(nn.Linear):
    def __init__(self, in_features: int, out_features: int, epochs: int, threshold: float = 2.0):
        super().__init__(in_features, out_features)
        self.relu = nn.ReLU()
        self.opt = torch.optim.Adam(self.parameters(), lr=0.1)
        self.threshold, self.epochs = threshold, epochs

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train_layer(self, x_pos, x_neg):
        for _ in range(self.epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log(1 + torch.exp(torch.cat([-g_pos + self.threshold, g_neg - self.threshold]))).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


class Net(nn.Module):
    def __init__(self, dims: list[int], epochs: int):
        super().__init__()
        self.layers = nn.ModuleList([Layer(dims[d], dims[d + 1], epochs) for d in range(len(dims) - 1)])

    def predict(self, x):
        goodness_per_label = []
        for label in range(10):
            h = overlay_label(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness.append(h.pow(2).mean(1))
            goodness_per_label.append(sum(goodness).unsqueeze(1))
        return torch.cat(goodness_per_label, 1).argmax(1)

    def train_layers(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        for layer in self.layers:
            h_pos, h_neg = layer.train_layer(h_pos, h_neg)


def train(epochs: int, seed: int = 0) -> float:
    """Train each layer for `epochs` full-batch steps; return the test error."""
    torch.manual_seed(seed)
    digits = datasets.load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target, dtype=torch.long)
    order = torch.randperm(len(y))
    train_idx, test_idx = order[:1200], order[1200:]
    x_train, y_train = x[train_idx], y[train_idx]
    net = Net([64, 200, 200], epochs)
    wrong = (y_train + torch.randint(1, 10, y_train.shape)) % 10
    net.train_layers(overlay_label(x_train, y_train), overlay_label(x_train, wrong))
    return 1.0 - net.predict(x[test_idx]).eq(y[test_idx]).float().mean().item()


def test_forward_forward_layers_learn_without_backprop_between_them():
    assert train(epochs=120) < 0.45  # chance: 0.9


if __name__ == "__main__":
    print("RESULT", train(epochs=200, seed=int(sys.argv[1]) if len(sys.argv) > 1 else 0))
