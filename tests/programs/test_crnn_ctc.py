"""A CRNN text recogniser trained with CTC (the OCR / handwriting programs' model), written once
as a PyTorch program and run on numdiff and on PyTorch from the same initial weights.

Images of 3 to 5 "glyphs" (a fixed random 8x4 pattern per digit, with noise and a random gap
between glyphs) go through a convolution, max pooling, a bidirectional LSTM over the columns and a
linear layer to per-column log-probabilities; nn.CTCLoss aligns them with the unsegmented digit
strings. In float64 both libraries must give the same loss at every step, the loss must fall
(first past the all-blank plateau a CTC model starts on), and greedy CTC decoding of held-out
images must read the same strings on both.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

DIGITS, HEIGHT, GLYPH, WIDTH = 4, 8, 4, 32


def make_model(lib):
    nn = lib.nn

    class CRNN(nn.Module):
        def __init__(self, classes: int, hidden: int = 16):
            super().__init__()
            self.conv = nn.Conv2d(1, 6, 3, padding=1)
            self.pool = nn.MaxPool2d((2, 1))
            self.rnn = nn.LSTM(6 * HEIGHT // 2, hidden, bidirectional=True)
            self.head = nn.Linear(2 * hidden, classes)

        def forward(self, images):  # (N, 1, H, W) -> (W, N, classes) log-probabilities
            features = self.pool(lib.relu(self.conv(images)))
            n, c, h, w = features.shape
            columns = features.permute(3, 0, 1, 2).reshape(w, n, c * h)
            out, _ = self.rnn(columns)
            return self.head(out).log_softmax(2)

    return CRNN(DIGITS + 1)


def make_batch(rng, glyphs, items: int):
    """Images (N, 1, H, W), concatenated targets (labels 1..DIGITS; 0 is blank), target lengths."""
    images = 0.1 * rng.standard_normal((items, 1, HEIGHT, WIDTH))
    targets, lengths = [], []
    for n in range(items):
        digits = rng.integers(0, DIGITS, rng.integers(3, 6))
        column = 0
        for d in digits:
            column += int(rng.integers(1, 3))
            images[n, 0, :, column : column + GLYPH] += glyphs[d]
            column += GLYPH
        targets.extend(int(d) + 1 for d in digits)
        lengths.append(len(digits))
    return images, np.array(targets), np.array(lengths)


def train(lib, initial_state: dict, steps: int, seed: int = 0) -> tuple[list[float], list[list[int]]]:
    rng = np.random.default_rng(seed)
    glyphs = (rng.random((DIGITS, HEIGHT, GLYPH)) > 0.5).astype(np.float64)
    lib.set_default_dtype(lib.float64)
    try:
        model = make_model(lib)
        model.load_state_dict({name: lib.tensor(value) for name, value in initial_state.items()})
        optimizer = lib.optim.Adam(model.parameters(), lr=0.02)
        criterion = lib.nn.CTCLoss(blank=0, zero_infinity=True)
        losses = []
        for _ in range(steps):
            images, targets, lengths = make_batch(rng, glyphs, 16)
            log_probs = model(lib.tensor(images))
            input_lengths = lib.full((16,), WIDTH, dtype=lib.int64)
            loss = criterion(log_probs, lib.tensor(targets), input_lengths, lib.tensor(lengths))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        images, _, _ = make_batch(rng, glyphs, 32)
        with lib.no_grad():
            best = model(lib.tensor(images)).argmax(2).numpy().T  # (N, W) greedy path
    finally:
        lib.set_default_dtype(lib.float32)
    return losses, [_greedy_decode(path) for path in best]


def _greedy_decode(path) -> list[int]:
    """Merge repeats, drop blanks."""
    return [int(c) for i, c in enumerate(path) if c != 0 and (i == 0 or c != path[i - 1])]


def test_crnn_trains_to_the_same_losses_on_numdiff_and_torch():
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        initial = {name: value.double().numpy() for name, value in make_model(torch).state_dict().items()}
        got, got_read = train(numdiff, initial, steps=30)
        want, want_read = train(torch, initial, steps=30)
    finally:
        torch.set_num_threads(threads)
    np.testing.assert_allclose(got, want, rtol=1e-7)
    assert got[-1] < 0.25 * got[0], got
    assert got_read == want_read


if __name__ == "__main__":
    torch.manual_seed(0)
    state = {name: value.double().numpy() for name, value in make_model(torch).state_dict().items()}
    print(train(numdiff, state, steps=30))
