"""More training steps for benchmarks/bench_models.py: families a new user reaches for that the first
fifteen rows do not cover (an encoder-decoder segmentation net, a GRU translator with attention, a
vision transformer, a 1-D convolutional classifier, an MLP trained with SGD and momentum).

Written as benchmarks/_models.py writes its own: ``(lib, quick, compile_fn) -> step``, weights from
per-name seeds, no library imported at module level.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from _models import _adam_step, _data, same_weights


def unet(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A two-level U-Net (conv-BN-ReLU blocks, max pooling down, 2x2 stride-2 transposed convs up,
    skip connections by concatenation), per-pixel cross-entropy over 2 classes; 8 x 3 x 64 x 64."""
    nn, fn = lib.nn, lib.nn.functional
    batch, size, width = (2, 16, 4) if quick else (8, 64, 16)

    def block(cin: int, cout: int) -> Any:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    class UNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.down1, self.down2, self.bottom = block(3, width), block(width, 2 * width), block(2 * width, 4 * width)
            self.up2, self.dec2 = nn.ConvTranspose2d(4 * width, 2 * width, 2, 2), block(4 * width, 2 * width)
            self.up1, self.dec1 = nn.ConvTranspose2d(2 * width, width, 2, 2), block(2 * width, width)
            self.head = nn.Conv2d(width, 2, 1)

        def forward(self, x: Any) -> Any:
            a = self.down1(x)
            b = self.down2(fn.max_pool2d(a, 2))
            c = self.bottom(fn.max_pool2d(b, 2))
            d = self.dec2(lib.cat([self.up2(c), b], 1))
            return self.head(self.dec1(lib.cat([self.up1(d), a], 1)))

    model = UNet()
    same_weights(lib, model)
    rng = _data(21)
    x = lib.tensor(rng.standard_normal((batch, 3, size, size)).astype("float32"))
    y = lib.tensor(rng.integers(0, 2, (batch, size, size)))
    return _adam_step(lib, [model], compile_fn(lambda x, y: fn.cross_entropy(model(x), y)), x, y)


def seq2seq(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A GRU encoder-decoder with Luong (general) attention, teacher forcing, batch_first: vocabulary
    100, embedding 64, hidden 128, 20 steps, batch 32 (the seq2seq translation tutorial's family)."""
    nn, fn = lib.nn, lib.nn.functional
    vocab, embedding, hidden, steps, batch = (20, 8, 12, 5, 2) if quick else (100, 64, 128, 20, 32)

    class Translator(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, embedding)
            self.encoder = nn.GRU(embedding, hidden, batch_first=True)
            self.decoder = nn.GRU(embedding, hidden, batch_first=True)
            self.score = nn.Linear(hidden, hidden, bias=False)
            self.head = nn.Linear(2 * hidden, vocab)

        def forward(self, source: Any, target: Any) -> Any:
            encoded, state = self.encoder(self.embed(source))
            decoded, _ = self.decoder(self.embed(target), state)
            weights = fn.softmax(lib.bmm(self.score(decoded), encoded.transpose(1, 2)), dim=-1)
            return self.head(lib.cat([decoded, lib.bmm(weights, encoded)], dim=-1))

    model = Translator()
    same_weights(lib, model)
    rng = _data(22)
    source = lib.tensor(rng.integers(0, vocab, (batch, steps)))
    target = lib.tensor(rng.integers(0, vocab, (batch, steps)))
    y = lib.tensor(rng.integers(0, vocab, (batch * steps,)))
    loss_of = compile_fn(lambda s, t, y: fn.cross_entropy(model(s, t).reshape(-1, vocab), y))
    return _adam_step(lib, [model], loss_of, source, target, y)


def vit(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A small vision transformer: 4x4 patches of 32x32 images by a strided conv, learned positions,
    two pre-norm encoder layers (d 64, 4 heads, ff 128, GELU, batch_first), mean pooling; 32 images."""
    nn, fn = lib.nn, lib.nn.functional
    batch, size, d_model = (2, 8, 16) if quick else (32, 32, 64)
    patches = (size // 4) ** 2

    class ViT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patch = nn.Conv2d(3, d_model, 4, 4)
            self.position = nn.Parameter(lib.zeros(1, patches, d_model))
            layer = nn.TransformerEncoderLayer(d_model, 4, 2 * d_model, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, 10)

        def forward(self, x: Any) -> Any:
            tokens = self.patch(x).flatten(2).transpose(1, 2) + self.position
            return self.head(self.norm(self.encoder(tokens)).mean(1))

    model = ViT()
    same_weights(lib, model)
    rng = _data(23)
    x = lib.tensor(rng.standard_normal((batch, 3, size, size)).astype("float32"))
    y = lib.tensor(rng.integers(0, 10, (batch,)))
    return _adam_step(lib, [model], compile_fn(lambda x, y: fn.cross_entropy(model(x), y)), x, y)


def conv1d_text(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A 1-D convolutional classifier over 200 frames of 40 features (keyword spotting, text CNNs):
    two conv1d 5-wide layers with ReLU and max pooling, global max pooling, Linear; batch 64."""
    nn, fn = lib.nn, lib.nn.functional
    batch, frames = (2, 16) if quick else (64, 200)
    model = nn.Sequential(
        nn.Conv1d(40, 64, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
        nn.Conv1d(64, 128, 5, padding=2), nn.ReLU(), nn.AdaptiveMaxPool1d(1), nn.Flatten(), nn.Linear(128, 5),
    )  # fmt: skip
    same_weights(lib, model)
    rng = _data(24)
    x = lib.tensor(rng.standard_normal((batch, 40, frames)).astype("float32"))
    y = lib.tensor(rng.integers(0, 5, (batch,)))
    return _adam_step(lib, [model], compile_fn(lambda x, y: fn.cross_entropy(model(x), y)), x, y)


def mlp_sgd(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """The MNIST MLP of the beginner tutorials: 784-512-512-10 with ReLU, SGD with momentum 0.9,
    batch 128 of 1x28x28 images; the compiled row compiles the whole training step."""
    nn, fn = lib.nn, lib.nn.functional
    batch, width = (4, 16) if quick else (128, 512)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, 10))
    same_weights(lib, model)
    rng = _data(25)
    x = lib.tensor(rng.standard_normal((batch, 1, 28, 28)).astype("float32"))
    y = lib.tensor(rng.integers(0, 10, (batch,)))
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def train_step(x: Any, y: Any) -> Any:
        optimizer.zero_grad()
        loss = fn.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    # The whole step compiled, as torch.compile users write it: under numdiff.compile the
    # backward and the SGD step join the compiled call (numdiff/compile/host_steps.py).
    compiled_step = compile_fn(train_step)

    def step() -> None:
        compiled_step(x, y)

    return step


MORE_WORKLOADS: dict[str, Callable[..., Callable[[], None]]] = {
    f.__name__: f for f in (unet, seq2seq, vit, conv1d_text, mlp_sgd)
}
"""The further families, in the order bench_models.py reports them after _models.WORKLOADS."""
