"""A LLaMA-style causal language model written as a PyTorch program and run on numdiff:
``nn.RMSNorm`` before attention and MLP, rotary position embeddings as real cos/sin tables with
``rotate_half``, ``F.scaled_dot_product_attention(is_causal=True)`` over (B, heads, T, d) views, a
SwiGLU feed-forward (``silu(w1 x) * w3 x``), an output head tied to the embedding, AdamW with
``clip_grad_norm_``, and sampling by top-k filtering, ``softmax`` and ``multinomial``.

The corpus is our own: sequences that count up modulo the vocabulary from a random start, so the
next token is always the previous one plus one. The model must learn that rule, and with PyTorch
installed the same weights must give PyTorch's losses and parameters step for step.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

VOCAB, DIM, HEADS, LENGTH = 16, 32, 4, 10
_rng = np.random.default_rng(63)
BATCHES = (_rng.integers(0, VOCAB, size=(40, 8, 1)) + np.arange(LENGTH)) % VOCAB


def train(torch, steps: int, initial: dict | None = None):
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling

    def rotary_tables(head_dim, length, theta=10000.0):
        inverse = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(length, dtype=torch.float32), inverse)
        angles = torch.cat((angles, angles), dim=-1)
        return torch.stack([angles.cos(), angles.sin()])

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention_norm, self.ffn_norm = nn.RMSNorm(DIM, eps=1e-6), nn.RMSNorm(DIM, eps=1e-6)
            self.wqkv, self.wo = nn.Linear(DIM, 3 * DIM, bias=False), nn.Linear(DIM, DIM, bias=False)
            self.w1, self.w3 = nn.Linear(DIM, 64, bias=False), nn.Linear(DIM, 64, bias=False)
            self.w2 = nn.Linear(64, DIM, bias=False)

        def forward(self, x, cos, sin):
            b, t, _ = x.shape
            q, k, v = (z.view(b, t, HEADS, DIM // HEADS).transpose(1, 2)
                       for z in self.wqkv(self.attention_norm(x)).split(DIM, dim=-1))
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.wo(attended.transpose(1, 2).contiguous().view(b, t, DIM))
            h = self.ffn_norm(x)
            return x + self.w2(F.silu(self.w1(h)) * self.w3(h))

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(VOCAB, DIM)
            self.layers = nn.ModuleList([Block(), Block()])
            self.norm = nn.RMSNorm(DIM)
            self.output = nn.Linear(DIM, VOCAB, bias=False)
            self.output.weight = self.embedding.weight
            self.register_buffer("rotary", rotary_tables(DIM // HEADS, 2 * LENGTH), persistent=False)

        def forward(self, tokens):
            h = self.embedding(tokens)
            cos, sin = self.rotary[:, : tokens.shape[1]]
            for layer in self.layers:
                h = layer(h, cos, sin)
            return self.output(self.norm(h))

        @torch.no_grad()
        def generate(self, tokens, count, top_k=3):
            for _ in range(count):
                logits = self(tokens)[:, -1, :]
                kth = torch.topk(logits, top_k).values[:, [-1]]
                probs = F.softmax(logits.masked_fill(logits < kth, -float("inf")), dim=-1)
                tokens = torch.cat((tokens, torch.multinomial(probs, 1)), dim=1)
            return tokens

    torch.manual_seed(0)
    model = Llama()
    if initial is not None:
        model.load_state_dict({name: torch.tensor(value) for name, value in initial.items()})
    start = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    losses = []
    for step in range(steps):
        tokens = torch.from_numpy(BATCHES[step % len(BATCHES)]).long()
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    assert model.output.weight is model.embedding.weight
    model.eval()
    prompts = torch.from_numpy(BATCHES[0][:4, :3]).long()
    with torch.no_grad():
        greedy = model(prompts).argmax(-1)[:, -1]
    final = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    return losses, final, start, (model, prompts, greedy)


def test_llama_style_model_learns_to_count_and_samples_from_its_top_k():
    losses, _, _, (model, prompts, greedy) = train(numdiff, 40)
    assert losses[-1] < 0.3 * losses[0], losses
    assert (greedy == (prompts[:, -1] + 1) % VOCAB).float().mean().item() >= 0.75
    sampled = model.generate(prompts, 4)
    assert tuple(sampled.shape) == (4, 7)
    assert ((sampled >= 0) & (sampled < VOCAB)).all().item()


def test_llama_style_model_matches_pytorch_step_for_step():
    torch = pytest.importorskip("torch")
    expected, expected_final, start, _ = train(torch, 4)
    got, final, _, _ = train(numdiff, 4, start)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for name, value in expected_final.items():
        np.testing.assert_allclose(final[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


if __name__ == "__main__":
    print("RESULT", train(numdiff, 40)[0][-1])
