"""A classifier whose Linear feeds LayerNorm and RMSNorm, trained under CPU autocast (bfloat16),
written as a PyTorch program and run on numdiff. Autocast lowers the Linear, so the norms get a
bfloat16 input with float32 weights: PyTorch computes them in float32 and returns bfloat16, and
RMSNorm's default eps is float32's. numdiff's norms returned float32 here, and RMSNorm raised on
any bfloat16 input (the seventh probe found both).

With PyTorch installed the same weights and batch must give PyTorch's dtypes, losses and
parameters step for step, to bfloat16's rounding; alone, the model must fit its batch.

Stands for: pytorch/tutorials recipes_source/recipes/amp_recipe.py run on the CPU with a
transformer-style head (LayerNorm, RMSNorm after a projection).
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

_rng = np.random.default_rng(22)
IMAGES = _rng.normal(size=(6, 3, 8, 8)).astype(np.float32)
LABELS = _rng.integers(0, 10, size=6)


def train(torch, steps: int, initial: dict | None = None) -> tuple[list, dict, dict]:
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.fc = nn.Linear(8 * 4 * 4, 16)
            self.ln = nn.LayerNorm(16)
            self.rms = nn.RMSNorm(16)
            self.head = nn.Linear(16, 10)

        def forward(self, x):
            x = F.adaptive_avg_pool2d(F.relu(self.conv(x)), 4)
            h = self.rms(F.gelu(self.ln(self.fc(x.flatten(1)))))
            return self.head(h), h

    torch.manual_seed(0)
    model = Net()
    if initial is not None:
        model.load_state_dict({name: torch.tensor(value) for name, value in initial.items()})
    start = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    images, labels = torch.from_numpy(IMAGES), torch.from_numpy(LABELS)
    records = []
    for _ in range(steps):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            logits, hidden = model(images)
            loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        records.append((str(hidden.dtype).split(".")[-1], str(loss.dtype).split(".")[-1], loss.item()))
    final = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    return records, final, start


def test_norms_after_an_autocast_linear_fit_the_batch_in_bfloat16():
    records, _, _ = train(numdiff, 30)
    assert records[0][:2] == ("bfloat16", "float32")
    assert records[-1][2] < 0.5 * records[0][2], records


def test_norms_under_autocast_match_pytorch_step_for_step():
    torch = pytest.importorskip("torch")
    expected, expected_final, start = train(torch, 3)
    got, final, _ = train(numdiff, 3, start)
    assert [r[:2] for r in got] == [r[:2] for r in expected]
    # bfloat16 keeps 8 bits: the two libraries round the lowered products alike but not always
    # identically, so losses and parameters agree to a few of its ulps, not float32's.
    np.testing.assert_allclose([r[2] for r in got], [r[2] for r in expected], rtol=2e-2)
    for name, value in expected_final.items():
        np.testing.assert_allclose(final[name], value, rtol=2e-2, atol=2e-3, err_msg=name)


if __name__ == "__main__":
    print("RESULT", train(numdiff, 30)[0][-1])
