"""Hogwild training: several processes update one shared model without locks, written as a
PyTorch program (``torch.multiprocessing``, ``model.share_memory()``) and run on numdiff. Stands
for pytorch/examples' mnist_hogwild (on scikit-learn's digits, two workers, fork start method).

The shared model must have learnt from the workers' steps (its loss falls in the parent process,
which never trains), and the workers must finish cleanly.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff as torch
import numdiff.multiprocessing as mp
import numdiff.nn as nn
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling

datasets = pytest.importorskip("sklearn.datasets")


def load_digits():
    digits = datasets.load_digits()
    x = torch.tensor((digits.data / 16.0).astype(np.float32))
    return x, torch.tensor(digits.target)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


def train(rank, model, x, y, epochs=3):
    torch.manual_seed(1 + rank)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True)
    for _ in range(epochs):
        for data, target in loader:
            optimizer.zero_grad()
            F.nll_loss(model(data), target).backward()
            optimizer.step()


def test_two_workers_train_one_shared_model():
    torch.manual_seed(0)
    x, y = load_digits()
    model = Net()
    model.share_memory()
    with torch.no_grad():
        before = float(F.nll_loss(model(x), y))
    context = mp.get_context("fork")
    workers = [context.Process(target=train, args=(rank, model, x, y)) for rank in range(2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(timeout=300)
    assert [p.exitcode for p in workers] == [0, 0]
    with torch.no_grad():
        after = float(F.nll_loss(model(x), y))
    assert after < 0.5 * before, (before, after)
