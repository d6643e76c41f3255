"""A multi-label tagger, written as a PyTorch program and run on numdiff. Stands for the notebook
scripts that build features with NumPy and train a small scorer: the per-sample statistics are
NumPy float64 scalars put in a list and handed to ``torch.tensor``; the labels are class lists
ended by -1 for ``MultiLabelMarginLoss`` (a tag listed twice counts twice); a bilinear score
``einsum`` in the sublist form; a mask of seen tags kept with ``scatter(reduce="multiply")``;
``x.flip(0, 1)`` and ``x.tile(2, 1)`` augment the batch. SGD with momentum trains it.

Each idiom failed on main before probe9: the float64 scalars became float32, the repeated tag
counted once, and the sublist einsum, scatter multiply and the flip/tile method forms raised.
The loss must fall, and with PyTorch installed the same weights give PyTorch's losses step
for step.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

FEATURES, TAGS, BATCH, STEPS = 6, 5, 8, 16
_rng = np.random.default_rng(91)
RAW = _rng.standard_normal((STEPS, BATCH, FEATURES))
LABELS = np.full((STEPS, BATCH, TAGS), -1)
for step in range(STEPS):
    for row in range(BATCH):
        # the tags follow the sign pattern of the first features; some rows list a tag twice
        tags = [int(t) for t in np.flatnonzero(RAW[step, row, :TAGS] > 0.3)] or [0]
        tags = tags + tags[:1] if row % 3 == 0 else tags
        LABELS[step, row, : min(len(tags), TAGS)] = tags[:TAGS]


def train(torch, initial: dict | None = None) -> tuple[list[list[float]], dict]:
    nn = torch.nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(FEATURES + 2, 8)
            self.tags = nn.Parameter(torch.randn(TAGS, 8) * 0.3)
            self.mix = nn.Parameter(torch.eye(8) + 0.01 * torch.randn(8, 8))

        def forward(self, x):
            h = torch.tanh(self.embed(x))
            return torch.einsum(h, [0, 1], self.mix, [1, 2], self.tags, [3, 2], [0, 3])

    torch.manual_seed(0)
    model = Tagger()
    start = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    if initial is not None:
        model.load_state_dict({k: torch.tensor(v) for k, v in initial.items()})
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.5)
    criterion = nn.MultiLabelMarginLoss()
    history = []
    for step in range(STEPS):
        raw = RAW[step]
        stats = torch.tensor([[np.mean(r), np.std(r)] for r in raw])  # NumPy float64 scalars
        x = torch.cat([torch.tensor(raw), stats], dim=1).float()
        x = torch.cat([x, x.flip(0, 1).flip(1)])  # the batch again, in reverse order
        labels = torch.tensor(LABELS[step]).tile(2, 1)
        labels = torch.cat([labels[:BATCH], labels[BATCH:].flip(0)])
        scores = model(x)
        loss = criterion(scores, labels)
        seen = torch.ones(TAGS).scatter(0, labels[labels >= 0], 0.5, reduce="multiply")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append([loss.item(), stats.dtype == torch.float64, *seen.tolist()])
    return history, start


def test_tagger_loss_falls():
    history, _ = train(numdiff)
    losses = [h[0] for h in history]
    assert np.mean(losses[-3:]) < 0.8 * np.mean(losses[:3]), losses
    assert all(h[1] for h in history)  # the NumPy statistics stayed float64


def test_tagger_matches_pytorch_step_for_step():
    torch = pytest.importorskip("torch")
    expected, start = train(torch)
    got, _ = train(numdiff, start)
    assert [h[1:] for h in got] == [h[1:] for h in expected]
    np.testing.assert_allclose([h[0] for h in got], [h[0] for h in expected], rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    print("RESULT", train(numdiff)[0][-1][0])
