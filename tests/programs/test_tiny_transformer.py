"""A tiny transformer encoder, written as a PyTorch program and run on numdiff, learns to reverse
sequences of digits: every output position must attend to its mirror position in the input.

Per-token accuracy on fresh sequences must end far above chance (1 / vocab).
"""

from __future__ import annotations

import numdiff as torch
import numdiff.nn as nn
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling

VOCAB, LENGTH = 8, 6


class Reverser(nn.Module):
    def __init__(self, d_model: int = 32, nhead: int = 4, num_layers: int = 2):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, d_model)
        self.positions = nn.Parameter(torch.randn(LENGTH, d_model) * 0.1)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=64, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, norm=nn.LayerNorm(d_model), enable_nested_tensor=False)
        self.head = nn.Linear(d_model, VOCAB)

    def forward(self, x):
        return self.head(self.encoder(self.tokens(x) + self.positions))


def make_batch(batch_size: int, generator):
    x = torch.randint(0, VOCAB, (batch_size, LENGTH), generator=generator)
    return x, x.flip(1)


def accuracy(model, generator, batch_size: int = 256) -> float:
    model.eval()
    with torch.no_grad():
        x, y = make_batch(batch_size, generator)
        correct = (model(x).argmax(-1) == y).float().mean().item()
    model.train()
    return correct


def main(steps: int = 200, batch_size: int = 32, lr: float = 1e-2, seed: int = 0) -> dict:
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    model = Reverser()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    before = accuracy(model, generator)
    losses = []
    for _ in range(steps):
        x, y = make_batch(batch_size, generator)
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return {"accuracy_before": before, "accuracy": accuracy(model, generator), "first_loss": losses[0], "last_loss": sum(losses[-10:]) / 10}


def test_tiny_transformer_learns_to_reverse():
    result = main()
    assert result["accuracy_before"] < 0.3, result
    assert result["accuracy"] > 0.95, result
    assert result["last_loss"] < 0.25 * result["first_loss"], result


if __name__ == "__main__":
    print(main())
