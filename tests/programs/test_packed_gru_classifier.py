"""A variable-length sequence classifier, written as a PyTorch program and run on numdiff: a
bidirectional GRU over packed sequences (pack_padded_sequence) decides whether a sequence's first
and last tokens are equal. Only a model whose final states come from each sequence's own last
step can do this, so accuracy far above chance (0.5) checks the packing end to end.
"""

from __future__ import annotations

import numpy as np

import numdiff as torch
import numdiff.nn as nn
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling
from numdiff.nn.utils.rnn import pack_padded_sequence

VOCAB, MAX_LEN = 5, 9


def make_batch(rng: np.random.Generator, batch_size: int):
    lengths = rng.integers(2, MAX_LEN + 1, batch_size)
    tokens = rng.integers(0, VOCAB, (batch_size, MAX_LEN))
    labels = rng.integers(0, 2, batch_size)
    for row, (length, same) in enumerate(zip(lengths, labels)):
        if same:
            tokens[row, length - 1] = tokens[row, 0]
        elif tokens[row, length - 1] == tokens[row, 0]:
            tokens[row, length - 1] = (tokens[row, 0] + rng.integers(1, VOCAB)) % VOCAB
        tokens[row, length:] = 0  # padding
    return torch.tensor(tokens), torch.tensor(lengths), torch.tensor(labels)


class FirstEqualsLast(nn.Module):
    def __init__(self, embed_dim: int = 8, hidden_size: int = 24):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, embed_dim)
        self.gru = nn.GRU(embed_dim, hidden_size, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden_size, 2)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embed(tokens), lengths, batch_first=True, enforce_sorted=False)
        _, h_n = self.gru(packed)  # (2, batch, hidden): forward and backward final states
        return self.head(torch.cat([h_n[0], h_n[1]], dim=1))


def main(steps: int = 200, batch_size: int = 32, lr: float = 0.02, seed: int = 0) -> dict:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = FirstEqualsLast()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        tokens, lengths, labels = make_batch(rng, batch_size)
        loss = F.cross_entropy(model(tokens, lengths), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        tokens, lengths, labels = make_batch(rng, 512)
        accuracy = (model(tokens, lengths).argmax(1) == labels).float().mean().item()
    return {"first_loss": losses[0], "last_loss": sum(losses[-10:]) / 10, "accuracy": accuracy}


def test_packed_gru_classifier_learns():
    result = main()
    assert result["accuracy"] > 0.9, result
    assert result["last_loss"] < 0.5 * result["first_loss"], result


if __name__ == "__main__":
    print(main())
