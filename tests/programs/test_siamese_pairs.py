"""A siamese network, written as a PyTorch program and run on numdiff. Stands for pytorch/examples'
siamese_network: one convolutional tower embeds both images of a pair (the weights are shared),
a small head with a sigmoid reads the two embeddings' absolute difference and says whether the
images show the same class; ``BCELoss``, ``Adadelta`` with ``StepLR``, a ``Dataset`` that draws pairs, the
tower's layers initialised through ``apply``.

Data: scikit-learn's 8x8 digits, half the pairs of one class and half of two. Accuracy on
held-out pairs must end far above chance (0.5).

Run as a script (``python3 tests/programs/test_siamese_pairs.py SEED``) to print the test
accuracy (the corpus runner compares it with PyTorch's).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import numdiff as torch
import numdiff.nn as nn
from numdiff.optim.lr_scheduler import StepLR
from numdiff.utils.data import DataLoader, Dataset

datasets = pytest.importorskip("sklearn.datasets")


class Pairs(Dataset):
    """Pairs of digit images with target 1 (same class) or 0 (different), drawn once per seed."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, n: int, seed: int):
        rng = np.random.default_rng(seed)
        by_class = [np.flatnonzero(labels == c) for c in range(10)]
        self.images, self.pairs = images, []
        for i in range(n):
            first = int(rng.integers(len(labels)))
            same = i % 2 == 0
            other_class = labels[first] if same else (labels[first] + rng.integers(1, 10)) % 10
            self.pairs.append((first, int(rng.choice(by_class[other_class])), float(same)))

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int):
        a, b, target = self.pairs[index]
        return torch.from_numpy(self.images[a]), torch.from_numpy(self.images[b]), torch.tensor(target)


class SiameseNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.tower = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((2, 2)),
            nn.Flatten(),
        )
        self.head = nn.Sequential(nn.Linear(128, 64), nn.ReLU(inplace=True), nn.Linear(64, 1))
        self.sigmoid = nn.Sigmoid()
        self.tower.apply(self.init_weights)

    @staticmethod
    def init_weights(m):
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            nn.init.zeros_(m.bias)

    def forward(self, input1, input2):
        features = torch.abs(self.tower(input1) - self.tower(input2))
        return self.sigmoid(self.head(features)).view(-1)


def train(epochs: int, seed: int = 0) -> float:
    """Train for `epochs` passes over 1024 training pairs; return accuracy on 400 test pairs."""
    torch.manual_seed(seed)
    digits = datasets.load_digits()
    images = (digits.images[:, None] / 16.0).astype(np.float32)
    split = 1300
    train_pairs = Pairs(images[:split], digits.target[:split], 1024, seed)
    test_pairs = Pairs(images[split:], digits.target[split:], 400, seed + 1)
    train_loader = DataLoader(train_pairs, batch_size=32, shuffle=True)
    model = SiameseNetwork()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    criterion = nn.BCELoss()
    for _ in range(epochs):
        model.train()
        for images_1, images_2, targets in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(images_1, images_2), targets)
            loss.backward()
            optimizer.step()
        scheduler.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for images_1, images_2, targets in DataLoader(test_pairs, batch_size=200):
            pred = torch.where(model(images_1, images_2) > 0.5, 1, 0)
            correct += pred.eq(targets.view_as(pred)).sum().item()
    return correct / len(test_pairs)


def test_the_siamese_network_tells_same_from_different_digits():
    assert train(epochs=2) > 0.65  # chance: 0.5


if __name__ == "__main__":
    print("RESULT", train(epochs=4, seed=int(sys.argv[1]) if len(sys.argv) > 1 else 0))
