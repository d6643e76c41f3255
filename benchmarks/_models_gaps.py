"""Training steps for benchmarks/bench_models.py from a third probe (session 18): twelve programs of
the families PyTorch's tutorials teach, written once for both libraries and never benchmarked before,
were timed against torch (one thread, CPU time, one process). Every one ran; these six showed the
largest gaps and belong to families the other rows miss:

- the text classification tutorial: EmbeddingBag over offsets, SGD, clip_grad_norm_ (1.37x);
- a siamese/triplet embedding CNN: 5x5 convs, PReLU, max pooling, triplet_margin_loss (1.53x);
- a temporal convolutional network: dilated Conv1d residual blocks (1.25x);
- a CNN with GroupNorm and SiLU (1.05x);
- a decoder that calls nn.GRUCell once per step (2.02x);
- an nn.LSTM encoder-decoder that hands the encoder's state to the decoder (1.28x).

Written as benchmarks/_models.py writes its own: ``(lib, quick, compile_fn) -> step``, weights from
per-name seeds, no library imported at module level.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from _models import _adam_step, _data, same_weights


def text_classification(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """PyTorch's text classification tutorial: nn.EmbeddingBag (vocabulary 5000, 64, mean) over a
    flat token list and its offsets, Linear to 4 classes; 64 texts of 5-40 tokens, SGD lr 5 with
    clip_grad_norm_(0.1) before each step."""
    nn, fn = lib.nn, lib.nn.functional
    vocab, width, texts = (50, 8, 4) if quick else (5000, 64, 64)

    class Classifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bag = nn.EmbeddingBag(vocab, width, mode="mean")
            self.fc = nn.Linear(width, 4)

        def forward(self, tokens: Any, offsets: Any) -> Any:
            return self.fc(self.bag(tokens, offsets))

    model = Classifier()
    same_weights(lib, model)
    rng = _data(41)
    lengths = rng.integers(5, 40, texts)
    tokens = lib.tensor(rng.integers(0, vocab, int(lengths.sum())))
    offsets = lib.tensor(np.concatenate([[0], np.cumsum(lengths)[:-1]]))
    y = lib.tensor(rng.integers(0, 4, (texts,)))
    optimizer = lib.optim.SGD(model.parameters(), lr=5.0)
    loss_of = compile_fn(lambda t, o, y: fn.cross_entropy(model(t, o), y))

    def step() -> None:
        optimizer.zero_grad()
        loss_of(tokens, offsets, y).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()

    step.loss = lambda: float(loss_of(tokens, offsets, y).detach())
    return step


def siamese_triplet(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """An embedding net trained with triplets: conv 5x5 32, PReLU, max-pool 2, conv 5x5 64, PReLU,
    max-pool 2, Linear to 64; anchor, positive and negative batches of 32 x 1 x 28 x 28."""
    nn, fn = lib.nn, lib.nn.functional
    batch, size = (2, 16) if quick else (32, 28)
    side = ((size - 4) // 2 - 4) // 2  # after two (conv 5x5, max-pool 2)
    model = nn.Sequential(
        nn.Conv2d(1, 32, 5), nn.PReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 5), nn.PReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * side * side, 64),
    )  # fmt: skip
    same_weights(lib, model)
    rng = _data(42)
    anchor, positive, negative = (lib.tensor(rng.standard_normal((batch, 1, size, size)).astype(np.float32)) for _ in range(3))
    loss_of = compile_fn(lambda a, p, n: fn.triplet_margin_loss(model(a), model(p), model(n)))
    return _adam_step(lib, [model], loss_of, anchor, positive, negative)


def tcn(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A temporal convolutional network: Conv1d 1x1 8 -> 48, three residual blocks of two dilated
    Conv1d k3 (dilation 1, 2, 4, same length) with ReLU, global average pooling, Linear to 10;
    32 series of 128 steps."""
    nn, fn = lib.nn, lib.nn.functional
    channels, length, batch = (6, 16, 2) if quick else (48, 128, 32)

    class Block(nn.Module):
        def __init__(self, dilation: int) -> None:
            super().__init__()
            self.first = nn.Conv1d(channels, channels, 3, padding=dilation, dilation=dilation)
            self.second = nn.Conv1d(channels, channels, 3, padding=dilation, dilation=dilation)

        def forward(self, x: Any) -> Any:
            return fn.relu(x + self.second(fn.relu(self.first(x))))

    model = nn.Sequential(
        nn.Conv1d(8, channels, 1), Block(1), Block(2), Block(4), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(channels, 10),
    )  # fmt: skip
    same_weights(lib, model)
    rng = _data(43)
    x = lib.tensor(rng.standard_normal((batch, 8, length)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, (batch,)))
    return _adam_step(lib, [model], compile_fn(lambda x, y: fn.cross_entropy(model(x), y)), x, y)


def groupnorm_cnn(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """(conv 3x3, GroupNorm 8 groups, SiLU, max-pool 2) with 32 then 64 channels, conv 3x3 64,
    GroupNorm, SiLU, global average pooling, Linear to 10; 32 x 3 x 32 x 32."""
    nn, fn = lib.nn, lib.nn.functional
    batch, size = (2, 8) if quick else (32, 32)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.GroupNorm(8, 32), nn.SiLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.GroupNorm(8, 64), nn.SiLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 64, 3, padding=1), nn.GroupNorm(8, 64), nn.SiLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    )  # fmt: skip
    same_weights(lib, model)
    rng = _data(44)
    x = lib.tensor(rng.standard_normal((batch, 3, size, size)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, (batch,)))
    return _adam_step(lib, [model], compile_fn(lambda x, y: fn.cross_entropy(model(x), y)), x, y)


def gru_cell_decoder(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A decoder written by hand over nn.GRUCell (embedding 32, hidden 128): 20 steps of a batch of
    8, each step's token embedded and fed to the cell, a Linear to the 50-token vocabulary on every
    hidden state, cross-entropy over the stacked outputs, Adam."""
    nn, fn = lib.nn, lib.nn.functional
    vocab, width, hidden, steps, batch = (10, 4, 6, 3, 2) if quick else (50, 32, 128, 20, 8)

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.cell = nn.GRUCell(width, hidden)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, tokens: Any) -> Any:
            h = lib.zeros(tokens.shape[0], hidden)
            outputs = []
            for t in range(tokens.shape[1]):
                h = self.cell(self.embed(tokens[:, t]), h)
                outputs.append(self.out(h))
            return lib.stack(outputs, 1)

    model = Decoder()
    same_weights(lib, model)
    rng = _data(45)
    tokens = lib.tensor(rng.integers(0, vocab, (batch, steps)))
    y = lib.tensor(rng.integers(0, vocab, (batch * steps,)))
    loss_of = compile_fn(lambda x, y: fn.cross_entropy(model(x).reshape(-1, vocab), y))
    return _adam_step(lib, [model], loss_of, tokens, y)


def lstm_seq2seq(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """An encoder-decoder of two nn.LSTM (embedding 64 shared, hidden 128, batch_first): the
    encoder's final (h, c) starts the decoder; Linear to the 200-token vocabulary; 16 pairs of 30
    and 25 tokens."""
    nn, fn = lib.nn, lib.nn.functional
    vocab, width, hidden, source_len, target_len, batch = (12, 4, 6, 4, 3, 2) if quick else (200, 64, 128, 30, 25, 16)

    class Translator(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.encoder = nn.LSTM(width, hidden, batch_first=True)
            self.decoder = nn.LSTM(width, hidden, batch_first=True)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, source: Any, target: Any) -> Any:
            _, state = self.encoder(self.embed(source))
            decoded, _ = self.decoder(self.embed(target), state)
            return self.out(decoded)

    model = Translator()
    same_weights(lib, model)
    rng = _data(46)
    source = lib.tensor(rng.integers(0, vocab, (batch, source_len)))
    target = lib.tensor(rng.integers(0, vocab, (batch, target_len)))
    y = lib.tensor(rng.integers(0, vocab, (batch * target_len,)))
    loss_of = compile_fn(lambda s, t, y: fn.cross_entropy(model(s, t).reshape(-1, vocab), y))
    return _adam_step(lib, [model], loss_of, source, target, y)


GAP_WORKLOADS: dict[str, Callable[..., Callable[[], None]]] = {
    f.__name__: f for f in (text_classification, siamese_triplet, tcn, groupnorm_cnn, gru_cell_decoder, lstm_seq2seq)
}
"""The third probe's families, in the order bench_models.py reports them after the others."""
