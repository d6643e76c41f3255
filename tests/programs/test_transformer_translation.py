"""Translation with the full ``nn.Transformer`` (encoder and decoder), written as a PyTorch program
and run on numdiff. Stands for pytorch/tutorials' "Language Translation with nn.Transformer":
source and target embeddings scaled by sqrt(d_model) plus learned positions, a causal target
mask from ``Transformer.generate_square_subsequent_mask``, source/target/memory key padding
masks from sequence lengths, ``cross_entropy`` with ``ignore_index`` on the padding, Adam with
the paper's betas and eps, then greedy decoding with the encoder and decoder called apart.

The task is our own: emit the source sequence reversed. Two batches, seen in turn: the loss must fall, and with PyTorch
installed the same weights and batches must give PyTorch's losses and greedy outputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

PAD, BOS, VOCAB, D_MODEL, SRC_LEN, BATCH, STEPS, BATCHES = 0, 1, 12, 16, 6, 8, 16, 2
_rng = np.random.default_rng(61)
SOURCES = _rng.integers(3, VOCAB, size=(BATCHES, BATCH, SRC_LEN))
LENGTHS = _rng.integers(3, SRC_LEN + 1, size=(BATCHES, BATCH))


def train(torch, initial: dict | None = None) -> tuple[list[float], list[int], dict]:
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling

    class Translator(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_emb = nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD)
            self.tgt_emb = nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD)
            self.pos = nn.Parameter(0.02 * torch.randn(SRC_LEN + 1, D_MODEL))
            self.transformer = nn.Transformer(D_MODEL, 2, 1, 1, 32, dropout=0.0, batch_first=True)
            self.generator = nn.Linear(D_MODEL, VOCAB)

        def embed(self, emb, tokens):
            return emb(tokens) * D_MODEL**0.5 + self.pos[: tokens.shape[1]]

        def forward(self, src, tgt, src_pad, tgt_pad):
            mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
            out = self.transformer(self.embed(self.src_emb, src), self.embed(self.tgt_emb, tgt), tgt_mask=mask,
                                   src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                                   memory_key_padding_mask=src_pad)
            return self.generator(out)

    torch.manual_seed(0)
    model = Translator()
    start = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    if initial is not None:
        model.load_state_dict({k: torch.tensor(v) for k, v in initial.items()})
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.98), eps=1e-9)
    losses = []
    for step in range(STEPS):
        pad = torch.arange(SRC_LEN)[None, :] >= torch.from_numpy(LENGTHS[step % BATCHES])[:, None]
        src = torch.from_numpy(SOURCES[step % BATCHES]).masked_fill(pad, PAD)
        # the reversed real tokens, padding after them
        tgt = torch.stack([torch.cat([s[~p].flip(0), s[p]]) for s, p in zip(src, pad)])
        tgt_in = torch.cat([torch.full((BATCH, 1), BOS, dtype=torch.long), tgt[:, :-1]], dim=1)
        logits = model(src, tgt_in, pad, tgt_in == PAD)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt.reshape(-1), ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        src = torch.from_numpy(SOURCES[0][:2])
        memory = model.transformer.encoder(model.embed(model.src_emb, src))
        ys = torch.full((2, 1), BOS, dtype=torch.long)
        for _ in range(SRC_LEN):
            mask = nn.Transformer.generate_square_subsequent_mask(ys.shape[1])
            out = model.transformer.decoder(model.embed(model.tgt_emb, ys), memory, tgt_mask=mask)
            ys = torch.cat([ys, model.generator(out[:, -1]).argmax(-1, keepdim=True)], dim=1)
    return losses, ys.flatten().tolist(), start


def test_transformer_translation_loss_falls():
    losses, decoded, _ = train(numdiff)
    assert np.mean(losses[-3:]) < 0.8 * np.mean(losses[:3]), losses
    assert len(decoded) == 2 * (SRC_LEN + 1) and all(0 <= t < VOCAB for t in decoded)


def test_transformer_translation_matches_pytorch_step_for_step():
    torch = pytest.importorskip("torch")
    expected, expected_decoded, start = train(torch)
    got, decoded, _ = train(numdiff, start)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert decoded == expected_decoded


if __name__ == "__main__":
    print("RESULT", train(numdiff)[0][-1])
