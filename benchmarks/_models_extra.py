"""Training steps for benchmarks/bench_models.py found by probing families the earlier rows miss, each
of which showed a gap the benchmark did not: a bidirectional two-layer LSTM classifier, a pre-norm
nn.Transformer with a float target mask, an EfficientNet-style net (SiLU, squeeze-excitation gates,
depthwise convs), an MLP with BatchNorm1d, and the char-RNN classifier PyTorch's "NLP from scratch"
tutorial writes by hand (Linear on cat(input, hidden) every character: tiny ops, per-op cost), and a time
loop written by hand over nn.LSTMCell.

Written as benchmarks/_models.py writes its own: ``(lib, quick, compile_fn) -> step``, weights from
per-name seeds, no library imported at module level.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from _models import _adam_step, _data, same_weights


def bilstm_classifier(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """Embedding 500x48, a bidirectional two-layer LSTM (hidden 64, batch_first), mean over time,
    Linear to 5 classes; 24 sequences of 40 tokens."""
    nn, fn = lib.nn, lib.nn.functional
    vocab, embedding, hidden, steps, batch = (30, 6, 8, 5, 3) if quick else (500, 48, 64, 40, 24)

    class Classifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, embedding)
            self.rnn = nn.LSTM(embedding, hidden, num_layers=2, batch_first=True, bidirectional=True)
            self.head = nn.Linear(2 * hidden, 5)

        def forward(self, x: Any) -> Any:
            out, _ = self.rnn(self.embed(x))
            return self.head(out.mean(1))

    model = Classifier()
    same_weights(lib, model)
    rng = _data(31)
    x = lib.tensor(rng.integers(0, vocab, (batch, steps)))
    y = lib.tensor(rng.integers(0, 5, (batch,)))
    return _adam_step(lib, [model], compile_fn(lambda x, y: fn.cross_entropy(model(x), y)), x, y)


def transformer_seq2seq(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """nn.Transformer (d 96, 4 heads, one encoder and one decoder layer, ff 256, pre-norm, GELU,
    batch_first) between two embedded token sequences, the causal target mask passed as a float
    tensor argument; vocabulary 300, 8 pairs of 24 and 20 tokens."""
    nn, fn = lib.nn, lib.nn.functional
    vocab, d_model, ff, source_len, target_len, batch = (20, 8, 16, 5, 4, 2) if quick else (300, 96, 256, 24, 20, 8)

    class Translator(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, d_model)
            self.transformer = nn.Transformer(d_model, 4 if not quick else 2, 1, 1, ff, dropout=0.0, batch_first=True,
                                              norm_first=True, activation="gelu")
            self.head = nn.Linear(d_model, vocab)

        def forward(self, source: Any, target: Any, mask: Any) -> Any:
            return self.head(self.transformer(self.embed(source), self.embed(target), tgt_mask=mask))

    model = Translator()
    same_weights(lib, model)
    rng = _data(32)
    source = lib.tensor(rng.integers(0, vocab, (batch, source_len)))
    target = lib.tensor(rng.integers(0, vocab, (batch, target_len)))
    y = lib.tensor(rng.integers(0, vocab, (batch * target_len,)))
    mask = lib.tensor(np.triu(np.full((target_len, target_len), -np.inf, dtype=np.float32), 1))
    loss_of = compile_fn(lambda s, t, m, y: fn.cross_entropy(model(s, t, m).reshape(-1, vocab), y))
    return _adam_step(lib, [model], loss_of, source, target, mask, y)


def efficientnet(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A stem conv and three MBConv blocks (1x1 expand x4, BatchNorm, SiLU, 3x3 depthwise, a
    squeeze-excitation gate, 1x1 project), global pooling, Linear; 16 x 3 x 32 x 32."""
    nn, fn = lib.nn, lib.nn.functional
    batch, size = (2, 8) if quick else (16, 32)

    class SqueezeExcite(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.reduce, self.expand = nn.Conv2d(c, c // 4, 1), nn.Conv2d(c // 4, c, 1)

        def forward(self, x: Any) -> Any:
            return x * lib.sigmoid(self.expand(fn.silu(self.reduce(fn.adaptive_avg_pool2d(x, 1)))))

    def mbconv(c_in: int, c_out: int, stride: int) -> Any:
        wide = 4 * c_in
        return nn.Sequential(
            nn.Conv2d(c_in, wide, 1, bias=False), nn.BatchNorm2d(wide), nn.SiLU(),
            nn.Conv2d(wide, wide, 3, stride, 1, groups=wide, bias=False), nn.BatchNorm2d(wide), nn.SiLU(),
            SqueezeExcite(wide), nn.Conv2d(wide, c_out, 1, bias=False), nn.BatchNorm2d(c_out),
        )  # fmt: skip

    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.SiLU(), mbconv(16, 24, 2), mbconv(24, 24, 1),
        mbconv(24, 40, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(40, 10),
    )  # fmt: skip
    same_weights(lib, model)
    rng = _data(33)
    x = lib.tensor(rng.standard_normal((batch, 3, size, size)).astype("float32"))
    y = lib.tensor(rng.integers(0, 10, (batch,)))
    return _adam_step(lib, [model], compile_fn(lambda x, y: fn.cross_entropy(model(x), y)), x, y)


def mlp_batchnorm(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """Linear 256 -> 512 -> 512 -> 10 with BatchNorm1d and ReLU after each hidden layer, Adam;
    a batch of 256 (tabular data, MNIST MLPs with batch norm)."""
    nn, fn = lib.nn, lib.nn.functional
    batch, width = (4, 8) if quick else (256, 512)
    model = nn.Sequential(
        nn.Linear(256, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Linear(width, width), nn.BatchNorm1d(width),
        nn.ReLU(), nn.Linear(width, 10),
    )  # fmt: skip
    same_weights(lib, model)
    rng = _data(34)
    x = lib.tensor(rng.standard_normal((batch, 256)).astype("float32"))
    y = lib.tensor(rng.integers(0, 10, (batch,)))
    return _adam_step(lib, [model], compile_fn(lambda x, y: fn.cross_entropy(model(x), y)), x, y)


def rnn_scratch(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """The "NLP from scratch" tutorial's char-RNN classifier: per character, Linear on cat(one-hot
    letter, hidden) to the next hidden and to log-probabilities over 18 languages; NLLLoss on the
    last output, SGD; names of 8 letters, one at a time (tiny ops: per-op cost)."""
    nn, fn = lib.nn, lib.nn.functional
    letters, hidden, classes, length = (57, 128, 18, 8) if not quick else (10, 6, 3, 3)

    class CharRNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.i2h = nn.Linear(letters + hidden, hidden)
            self.i2o = nn.Linear(letters + hidden, classes)

        def forward(self, x: Any, h: Any) -> tuple[Any, Any]:
            combined = lib.cat((x, h), 1)
            return fn.log_softmax(self.i2o(combined), dim=1), self.i2h(combined)

    model = CharRNN()
    same_weights(lib, model)
    rng = _data(35)
    name = lib.tensor(np.eye(letters, dtype=np.float32)[rng.integers(0, letters, length)][:, None, :])
    y = lib.tensor(rng.integers(0, classes, (1,)))
    optimizer = lib.optim.SGD(model.parameters(), lr=0.005)

    def loss_of(name: Any, y: Any) -> Any:
        h = lib.zeros(1, hidden)
        for t in range(length):
            out, h = model(name[t], h)
        return fn.nll_loss(out, y)

    compiled = compile_fn(loss_of)

    def step() -> None:
        optimizer.zero_grad()
        compiled(name, y).backward()
        optimizer.step()

    step.loss = lambda: float(loss_of(name, y).detach())
    return step


def lstm_cell_loop(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A time loop written by hand over nn.LSTMCell (input 32, hidden 64), as tutorials and
    sequence-prediction programs write it: 30 steps of a batch of 16, a Linear head on every
    step's hidden state, MSE against the next input, Adam."""
    nn, fn = lib.nn, lib.nn.functional
    features, hidden, steps, batch = (4, 6, 3, 2) if quick else (32, 64, 30, 16)
    cell, head = nn.LSTMCell(features, hidden), nn.Linear(hidden, features)
    same_weights(lib, cell)
    same_weights(lib, head)
    rng = _data(36)
    series = lib.tensor(rng.standard_normal((steps + 1, batch, features)).astype("float32"))

    def loss_of(series: Any, target: Any) -> Any:
        h = c = lib.zeros(batch, hidden)
        total = 0.0
        for t in range(steps):
            h, c = cell(series[t], (h, c))
            total = total + fn.mse_loss(head(h), target[t])
        return total / steps

    return _adam_step(lib, [cell, head], compile_fn(loss_of), series[:steps], series[1:])


EXTRA_WORKLOADS: dict[str, Callable[..., Callable[[], None]]] = {
    f.__name__: f
    for f in (bilstm_classifier, transformer_seq2seq, efficientnet, mlp_batchnorm, rnn_scratch, lstm_cell_loop)
}
"""The families found by probing, in the order bench_models.py reports them after the others."""
