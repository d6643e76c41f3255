"""A character-level LSTM language model, written as a PyTorch program and run on numdiff.

Learns to continue a short repeating text: the loss per character must fall far below log(vocab)
(what a model that knows nothing scores), and greedy sampling must reproduce the text.
"""

from __future__ import annotations

import math

import numdiff as torch
import numdiff.nn as nn
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling

TEXT = "the quick brown fox jumps over the lazy dog. " * 8


class CharLSTM(nn.Module):
    def __init__(self, vocab_size: int, embed_dim: int = 16, hidden_size: int = 48):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.lstm = nn.LSTM(embed_dim, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, vocab_size)

    def forward(self, tokens, state=None):
        out, state = self.lstm(self.embed(tokens), state)
        return self.head(out), state


def batches(data, seq_len: int, batch_size: int, generator):
    starts = torch.randint(0, len(data) - seq_len - 1, (batch_size,), generator=generator).tolist()
    x = torch.stack([data[s : s + seq_len] for s in starts])
    y = torch.stack([data[s + 1 : s + seq_len + 1] for s in starts])
    return x, y


def sample(model, stoi, itos, prompt: str, length: int) -> str:
    model.eval()
    with torch.no_grad():
        tokens = torch.tensor([[stoi[c] for c in prompt]])
        logits, state = model(tokens)
        out = prompt
        for _ in range(length):
            next_id = int(logits[0, -1].argmax())
            out += itos[next_id]
            logits, state = model(torch.tensor([[next_id]]), state)
    model.train()
    return out


def main(steps: int = 120, seq_len: int = 24, batch_size: int = 16, seed: int = 0) -> dict:
    torch.manual_seed(seed)
    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    itos = dict(enumerate(chars))
    data = torch.tensor([stoi[c] for c in TEXT])
    model = CharLSTM(len(chars))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    generator = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(steps):
        x, y = batches(data, seq_len, batch_size, generator)
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, len(chars)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    text = sample(model, stoi, itos, "the quick", 36)
    return {"vocab": len(chars), "first_loss": losses[0], "last_loss": sum(losses[-10:]) / 10, "sample": text}


def test_char_lstm_learns_the_text():
    result = main()
    assert result["first_loss"] > 0.9 * math.log(result["vocab"])
    assert result["last_loss"] < 0.3, result
    assert result["sample"] == TEXT[: len(result["sample"])], result["sample"]


if __name__ == "__main__":
    print(main())
