"""A GRU language model over variable-length sequences, written as a PyTorch program and run on
numdiff. Stands for the tutorial scripts that sort a batch by length, pack it and move it with
``packed.to(device)``, evaluate under a bare ``@torch.no_grad`` decorator, sample from the model
in a generator function decorated with ``@torch.no_grad()``, and replay a shuffled epoch order
with ``Generator.get_state``/``set_state``.

Each idiom failed on main before probe11: ``PackedSequence.to`` and ``Generator.get_state``
raised AttributeError, ``@torch.no_grad`` without parentheses raised TypeError, and the decorated
generator ran with grad mode on (its samples required grad). The loss must fall, and with
PyTorch installed the same weights give PyTorch's losses step for step.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

VOCAB, HIDDEN, BATCH, STEPS = 12, 16, 6, 14
_rng = np.random.default_rng(111)
# Counting sequences mod VOCAB (start, start + 1, ...) of 3 to 9 tokens: the next token is learnable.
SEQUENCES = [
    [(start + i) % VOCAB for i in range(length)]
    for start, length in zip(_rng.integers(0, VOCAB, STEPS * BATCH), _rng.integers(3, 10, STEPS * BATCH))
]


def run(torch, initial: dict | None = None) -> tuple[list[float], dict, dict]:
    nn = torch.nn
    rnn_utils = torch.nn.utils.rnn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, HIDDEN)
            self.gru = nn.GRU(HIDDEN, HIDDEN, batch_first=True)
            self.out = nn.Linear(HIDDEN, VOCAB)

        def forward(self, packed):
            output, hidden = self.gru(packed)
            padded, lengths = rnn_utils.pad_packed_sequence(output, batch_first=True)
            return self.out(padded), lengths, hidden

    def batch(sequences, device):
        sequences = sorted(sequences, key=len, reverse=True)
        lengths = [len(s) - 1 for s in sequences]
        inputs = rnn_utils.pad_sequence([torch.tensor(s[:-1]) for s in sequences], batch_first=True)
        targets = rnn_utils.pad_sequence([torch.tensor(s[1:]) for s in sequences], batch_first=True, padding_value=-100)
        packed = rnn_utils.pack_padded_sequence(model.embed(inputs), lengths, batch_first=True)
        return packed.to(device), targets

    @torch.no_grad
    def evaluate(device):
        logits, _, _ = model(batch(SEQUENCES[:BATCH], device)[0])
        return logits.requires_grad

    @torch.no_grad()
    def sample(start, steps):
        token, hidden = torch.tensor([[start]]), None
        for _ in range(steps):
            output, hidden = model.gru(model.embed(token), hidden)
            token = model.out(output).argmax(-1)
            yield token

    torch.manual_seed(0)
    model = LM()
    start = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    if initial is not None:
        model.load_state_dict({k: torch.tensor(v) for k, v in initial.items()})
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    device = torch.device("cpu")
    losses = []
    for step in range(STEPS):
        packed, targets = batch(SEQUENCES[step * BATCH : (step + 1) * BATCH], device)
        output, _ = model.gru(packed)
        padded, _ = rnn_utils.pad_packed_sequence(output, batch_first=True)
        loss = nn.functional.cross_entropy(model.out(padded).flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    shuffler = torch.Generator().manual_seed(5)
    state = shuffler.get_state()
    order = torch.randperm(len(SEQUENCES), generator=shuffler)
    replayed = torch.randperm(len(SEQUENCES), generator=shuffler.set_state(state))
    samples = list(sample(3, 4))
    checks = {
        "evaluate_requires_grad": evaluate(device),
        "samples_require_grad": any(t.requires_grad for t in samples),
        "replayed_order": bool(torch.equal(order, replayed)),
        "grad_mode_after": torch.is_grad_enabled(),
    }
    return losses, start, checks


def test_language_model_loss_falls_and_the_idioms_behave():
    losses, _, checks = run(numdiff)
    assert np.mean(losses[-3:]) < 0.7 * np.mean(losses[:3]), losses
    assert checks == {
        "evaluate_requires_grad": False,
        "samples_require_grad": False,
        "replayed_order": True,
        "grad_mode_after": True,
    }


def test_language_model_matches_pytorch_step_for_step():
    torch = pytest.importorskip("torch")
    expected, start, expected_checks = run(torch)
    got, _, checks = run(numdiff, start)
    assert checks == expected_checks
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


if __name__ == "__main__":
    print("RESULT", run(numdiff)[0][-1])
