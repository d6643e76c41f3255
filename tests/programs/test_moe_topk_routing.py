"""A Mixture-of-Experts language model with top-k routing, written as a PyTorch program and run on
numdiff. Stands for the MoE layers of Switch/Mixtral-style tutorials: a linear gate, softmax,
``topk`` over experts with the chosen weights renormalised, tokens gathered per expert with
``torch.where`` on the routing table, each expert's output scaled and added back with
``index_add_``, and the load-balancing auxiliary loss (fraction of tokens routed to each expert
times its mean gate probability, from ``F.one_hot``). AdamW trains it on a next-token task.

The task is our own: every token is followed by (token + 1) mod vocabulary. The loss must fall,
and with PyTorch installed the same weights and batches must give PyTorch's losses and routing
counts step for step.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

VOCAB, D, EXPERTS, TOP_K, BATCH, LENGTH, STEPS = 16, 16, 4, 2, 4, 9, 10
_rng = np.random.default_rng(71)
STARTS = _rng.integers(0, VOCAB, size=(STEPS, BATCH, 1))
TOKENS = (STARTS + np.arange(LENGTH)) % VOCAB


def train(torch, initial: dict | None = None) -> tuple[list[float], dict]:
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling

    class MoE(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = nn.Linear(D, EXPERTS, bias=False)
            self.experts = nn.ModuleList(
                nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D)) for _ in range(EXPERTS))

        def forward(self, x):
            flat = x.reshape(-1, D)
            probs = F.softmax(self.gate(flat), dim=-1)
            weights, chosen = probs.topk(TOP_K, dim=-1)
            weights = weights / weights.sum(-1, keepdim=True)
            out = torch.zeros_like(flat)
            counts = []
            for e, expert in enumerate(self.experts):
                token, slot = torch.where(chosen == e)
                counts.append(token.numel())
                if token.numel():
                    out.index_add_(0, token, expert(flat[token]) * weights[token, slot].unsqueeze(-1))
            routed = F.one_hot(chosen[:, 0], EXPERTS).float().mean(0)
            balance = EXPERTS * (routed * probs.mean(0)).sum()
            return x + out.reshape(x.shape), balance, counts

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, D)
            self.norm = nn.LayerNorm(D)
            self.moe = MoE()
            self.head = nn.Linear(D, VOCAB)

        def forward(self, tokens):
            h, balance, counts = self.moe(self.norm(self.embed(tokens)))
            return self.head(h), balance, counts

    torch.manual_seed(0)
    model = LM()
    start = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    if initial is not None:
        model.load_state_dict({k: torch.tensor(v) for k, v in initial.items()})
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    history = []
    for step in range(STEPS):
        tokens = torch.from_numpy(TOKENS[step])
        logits, balance, counts = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:]) + 0.01 * balance
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append([loss.item(), *counts])
    return history, start


def test_moe_language_model_loss_falls():
    history, _ = train(numdiff)
    losses = [h[0] for h in history]
    assert np.mean(losses[-3:]) < 0.8 * np.mean(losses[:3]), losses
    assert all(sum(h[1:]) == TOP_K * BATCH * (LENGTH - 1) for h in history)


def test_moe_matches_pytorch_step_for_step():
    torch = pytest.importorskip("torch")
    expected, start = train(torch)
    got, _ = train(numdiff, start)
    assert [h[1:] for h in got] == [h[1:] for h in expected]  # the same tokens reach the same experts
    np.testing.assert_allclose([h[0] for h in got], [h[0] for h in expected], rtol=1e-4, atol=1e-5)


if __name__ == "__main__":
    print("RESULT", train(numdiff)[0][-1][0])
