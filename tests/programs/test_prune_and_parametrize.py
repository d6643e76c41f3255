"""A digits classifier with a weight-normalised first layer and an orthogonal hidden layer, trained,
then pruned globally by magnitude and fine-tuned with the masks in place, written as a PyTorch
program and run on numdiff. Stands for pytorch/tutorials' pruning tutorial (l1/ln pruning,
global_unstructured, remove) and parametrizations tutorial (register_parametrization, orthogonal,
right_inverse, cached, remove_parametrizations).

The hidden weight must stay orthogonal through training, the pruned model must keep exactly the
requested sparsity and most of its accuracy, and the parametrizations must come off cleanly.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff as torch
import numdiff.nn as nn
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling
import numdiff.nn.utils.parametrize as parametrize
import numdiff.nn.utils.prune as prune
from numdiff.nn.utils import parametrizations

datasets = pytest.importorskip("sklearn.datasets")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = parametrizations.weight_norm(nn.Linear(64, 32))
        self.fc2 = parametrizations.orthogonal(nn.Linear(32, 32))
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def digits():
    data = datasets.load_digits()
    x = torch.tensor((data.data / 16.0).astype(np.float32))
    y = torch.tensor(data.target.astype(np.int64))
    return x[:1200], y[:1200], x[1200:], y[1200:]


def train(model, x, y, steps, lr=0.05):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        idx = torch.randint(0, len(x), (64,))
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss)


def accuracy(model, x, y):
    with torch.no_grad(), parametrize.cached():
        return float((model(x).argmax(1) == y).float().mean())


def test_prune_a_parametrized_classifier():
    torch.manual_seed(0)
    x, y, x_test, y_test = digits()
    model = Net()
    train(model, x, y, steps=150)
    w = model.fc2.weight.detach().numpy()
    np.testing.assert_allclose(w @ w.T, np.eye(32), atol=1e-4)
    trained = accuracy(model, x_test, y_test)
    assert trained > 0.85

    prune.global_unstructured([(model.fc3, "weight")], pruning_method=prune.L1Unstructured, amount=0.5)
    prune.ln_structured(model.fc3, name="weight", amount=2, n=1, dim=1)
    train(model, x, y, steps=60, lr=0.01)
    zeros = int((model.fc3.weight == 0).sum())
    assert zeros >= 160 and int((model.fc3.weight_mask.sum(dim=0) == 0).sum()) >= 2
    assert accuracy(model, x_test, y_test) > trained - 0.1

    prune.remove(model.fc3, "weight")
    parametrize.remove_parametrizations(model.fc2, "weight")
    parametrize.remove_parametrizations(model.fc1, "weight")
    assert [type(m).__name__ for m in (model.fc1, model.fc2)] == ["Linear", "Linear"]
    assert sorted(model.state_dict()) == sorted(f"fc{i}.{p}" for i in (1, 2, 3) for p in ("weight", "bias"))
    assert int((model.fc3.weight == 0).sum()) == zeros
