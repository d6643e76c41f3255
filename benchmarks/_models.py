"""The training steps of benchmarks/bench_models.py, written once against either library.

Each workload is a function ``(lib, quick, compile_fn) -> step`` where `lib` is numdiff or torch,
`quick` shrinks every size for a smoke run and `compile_fn` is ``numdiff.compile`` (or the
identity), applied to the function that computes the loss from the inputs, so that the model and
its loss are one compiled region. `step()` runs one optimizer step. Weights come from fixed
per-name seeds (:func:`same_weights`), so both libraries train the same numbers; neither file
imports a library at module level (the PyTorch worker must never import numdiff).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np


def same_weights(lib: Any, *modules: Any) -> None:
    """Every parameter ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) from a seed of its name (norm weights
    around 1), written in place, so numdiff and torch start from the same numbers."""
    for index, module in enumerate(modules):
        for name, p in module.named_parameters():
            with lib.no_grad():
                p.copy_(lib.tensor(weight_values(f"{index}.{name}", tuple(p.shape))))


def weight_values(key: str, shape: tuple) -> np.ndarray:
    """The float32 values :func:`same_weights` gives the parameter `key` ("module index.name") of
    `shape`; the JAX steps (benchmarks/_jax_steps_sequence.py) draw their weights from it too."""
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    fan_in = math.prod(shape[1:]) if len(shape) > 1 else shape[0]
    bound = 1.0 / math.sqrt(max(fan_in, 1))
    values = rng.uniform(-bound, bound, shape)
    if len(shape) == 1 and key.endswith("weight"):  # a norm layer's scale
        values = 1.0 + 0.1 * values
    return values.astype(np.float32)


def _data(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _adam_step(lib: Any, modules: list, loss_of: Callable, *inputs: Any) -> Callable[[], None]:
    params = [p for m in modules for p in m.parameters()]
    opt = lib.optim.Adam(params, lr=1e-3)

    def step() -> None:
        opt.zero_grad()
        loss_of(*inputs).backward()
        opt.step()

    step.loss = lambda: float(loss_of(*inputs).detach())  # the loss now, for the tests that compare libraries
    return step


# The recurrent language models: workload -> (cell, (vocab, embedding, hidden, layers, steps, batch)).
TOKEN_LMS = {
    "char_lstm": ("LSTM", (65, 64, 128, 1, 64, 16)),
    "char_gru": ("GRU", (65, 64, 128, 1, 64, 16)),
    "rnn_tanh": ("RNN", (65, 64, 128, 1, 64, 16)),
    "word_lstm": ("LSTM", (1000, 200, 200, 2, 35, 20)),
}


def token_lm_sizes(sizes: tuple, quick: bool) -> tuple:
    """(vocab, embedding, hidden, layers, steps, batch) of a TOKEN_LMS row, shrunk when `quick`."""
    return (sizes[0], 16, 24, sizes[3], 8, 2) if quick else sizes


def token_lm_data(vocab: int, steps: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Time-major tokens (steps, batch) and their targets (steps * batch,)."""
    rng = _data(1)
    return rng.integers(0, vocab, (steps, batch)), rng.integers(0, vocab, (steps * batch,))


def _token_lm(lib: Any, quick: bool, compile_fn: Callable, workload: str) -> Callable[[], None]:
    """Embedding, the recurrent layer of TOKEN_LMS[workload] (nn.LSTM, nn.GRU, nn.RNN), Linear back to
    the vocabulary; time-major input."""
    nn, fn = lib.nn, lib.nn.functional
    cell, sizes = TOKEN_LMS[workload]
    vocab, embedding, hidden, layers, steps, batch = token_lm_sizes(sizes, quick)

    class TokenRNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, embedding)
            self.rnn = getattr(nn, cell)(embedding, hidden, layers)
            self.head = nn.Linear(hidden, vocab)

        def forward(self, x: Any) -> Any:
            return self.head(self.rnn(self.embed(x))[0])

    model = TokenRNN()
    same_weights(lib, model)
    x, y = (lib.tensor(a) for a in token_lm_data(vocab, steps, batch))
    loss_of = compile_fn(lambda x, y: fn.cross_entropy(model(x).reshape(-1, vocab), y))
    return _adam_step(lib, [model], loss_of, x, y)


def char_lstm(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """Embedding 65x64, LSTM 64->128, Linear; 64 steps x batch 16 (char-rnn, word_language_model)."""
    return _token_lm(lib, quick, compile_fn, "char_lstm")


def char_gru(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """As char_lstm with a GRU."""
    return _token_lm(lib, quick, compile_fn, "char_gru")


def rnn_tanh(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """As char_lstm with an Elman RNN (tanh)."""
    return _token_lm(lib, quick, compile_fn, "rnn_tanh")


def word_lstm(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """pytorch/examples' word_language_model LSTM: embedding 200, 2 layers of hidden 200, bptt 35,
    batch 20; a 1000-word vocabulary (as word_transformer, not wikitext-2's 33278) and no dropout."""
    return _token_lm(lib, quick, compile_fn, "word_lstm")


def word_transformer(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """Embedding 1000x128 + learned positions, 2 TransformerEncoderLayers (4 heads, ff 512,
    causal mask), Linear to the vocabulary; batch 16 x 35 tokens (word_language_model)."""
    nn, fn = lib.nn, lib.nn.functional
    vocab, d, tokens, batch = (50, 16, 6, 2) if quick else (1000, 128, 35, 16)

    class WordLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.position = nn.Parameter(lib.zeros(tokens, d))
            layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(d, vocab)

        def forward(self, x: Any, mask: Any) -> Any:
            return self.head(self.encoder(self.embed(x) + self.position, mask=mask, is_causal=True))

    model = WordLM()
    same_weights(lib, model)
    rng = _data(2)
    x = lib.tensor(rng.integers(0, vocab, (batch, tokens)))
    y = lib.tensor(rng.integers(0, vocab, (batch * tokens,)))
    mask = nn.Transformer.generate_square_subsequent_mask(tokens)
    loss_of = compile_fn(lambda x, y: fn.cross_entropy(model(x, mask).reshape(-1, vocab), y))
    return _adam_step(lib, [model], loss_of, x, y)


def min_gpt(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A minGPT-sized decoder: 4 pre-norm blocks (causal scaled_dot_product_attention, GELU MLP),
    d 128, 4 heads, 64 tokens, batch 16, vocabulary 65 (minGPT's char demo)."""
    nn, fn = lib.nn, lib.nn.functional
    vocab, d, heads, tokens, batch, depth = (17, 16, 2, 8, 2, 2) if quick else (65, 128, 4, 64, 16, 4)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x: Any) -> Any:
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.reshape(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
            y = fn.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.position = nn.Embedding(tokens, d)
            self.blocks = nn.Sequential(*[Block() for _ in range(depth)])
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, x: Any, positions: Any) -> Any:
            return self.head(self.ln(self.blocks(self.embed(x) + self.position(positions))))

    model = GPT()
    same_weights(lib, model)
    rng = _data(3)
    x = lib.tensor(rng.integers(0, vocab, (batch, tokens)))
    y = lib.tensor(rng.integers(0, vocab, (batch * tokens,)))
    positions = lib.arange(tokens)
    loss_of = compile_fn(lambda x, y: fn.cross_entropy(model(x, positions).reshape(-1, vocab), y))
    return _adam_step(lib, [model], loss_of, x, y)


def cifar_bn(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """CIFAR-style CNN with BatchNorm2d: (conv-BN-ReLU) x2, max-pool, x2, max-pool, Linear; 64x3x32x32."""
    nn, fn = lib.nn, lib.nn.functional
    batch, size = (4, 8) if quick else (64, 32)

    def unit(c_in: int, c_out: int) -> list:
        return [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]

    model = nn.Sequential(
        *unit(3, 32), *unit(32, 32), nn.MaxPool2d(2), *unit(32, 64), *unit(64, 64), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * (size // 4) ** 2, 10),
    )  # fmt: skip
    same_weights(lib, model)
    rng = _data(4)
    x = lib.tensor(rng.standard_normal((batch, 3, size, size)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, (batch,)))
    loss_of = compile_fn(lambda x, y: fn.cross_entropy(model(x), y))
    return _adam_step(lib, [model], loss_of, x, y)


def cnn3d(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A small volumetric CNN: (Conv3d 3x3x3-BatchNorm3d-ReLU, MaxPool3d 2) with 8 then 16 channels,
    Conv3d 32, AdaptiveAvgPool3d 1, Linear; 8x1x16x16x16 volumes."""
    nn, fn = lib.nn, lib.nn.functional
    batch, size = (2, 8) if quick else (8, 16)

    def unit(c_in: int, c_out: int) -> list:
        return [nn.Conv3d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm3d(c_out), nn.ReLU()]

    model = nn.Sequential(
        *unit(1, 8), nn.MaxPool3d(2), *unit(8, 16), nn.MaxPool3d(2), *unit(16, 32), nn.AdaptiveAvgPool3d(1),
        nn.Flatten(), nn.Linear(32, 10),
    )  # fmt: skip
    same_weights(lib, model)
    rng = _data(12)
    x = lib.tensor(rng.standard_normal((batch, 1, size, size, size)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, (batch,)))
    loss_of = compile_fn(lambda x, y: fn.cross_entropy(model(x), y))
    return _adam_step(lib, [model], loss_of, x, y)


def resnet(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A small ResNet: stem conv 16, three stages of one BasicBlock (16, 32 and 64 channels, the
    last two stride 2 with 1x1 shortcuts), global average pool, Linear; 32x3x32x32."""
    nn, fn = lib.nn, lib.nn.functional
    batch, size = (2, 8) if quick else (32, 32)

    class BasicBlock(nn.Module):
        def __init__(self, c_in: int, c_out: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c_out)
            self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(c_out)
            self.shortcut = nn.Sequential()
            if stride != 1 or c_in != c_out:
                self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

        def forward(self, x: Any) -> Any:
            out = fn.relu(self.bn1(self.conv1(x)))
            return fn.relu(self.bn2(self.conv2(out)) + self.shortcut(x))

    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        BasicBlock(16, 16, 1), BasicBlock(16, 32, 2), BasicBlock(32, 64, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    )  # fmt: skip
    same_weights(lib, model)
    rng = _data(5)
    x = lib.tensor(rng.standard_normal((batch, 3, size, size)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, (batch,)))
    loss_of = compile_fn(lambda x, y: fn.cross_entropy(model(x), y))
    return _adam_step(lib, [model], loss_of, x, y)


def dcgan(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """DCGAN on 32x32x3: generator (latent 64 -> ConvTranspose2d 4x4 -> 8 -> 16 -> 32, BatchNorm,
    ReLU, Tanh), discriminator (strided convs, LeakyReLU, BatchNorm, Sigmoid); one step trains D on
    real and fake, then G, with binary cross-entropy (the dcgan example); batch 32."""
    nn, fn = lib.nn, lib.nn.functional
    batch, width = (2, 8) if quick else (32, 32)
    generator = nn.Sequential(
        nn.ConvTranspose2d(64, 4 * width, 4, 1, 0, bias=False), nn.BatchNorm2d(4 * width), nn.ReLU(),
        nn.ConvTranspose2d(4 * width, 2 * width, 4, 2, 1, bias=False), nn.BatchNorm2d(2 * width), nn.ReLU(),
        nn.ConvTranspose2d(2 * width, width, 4, 2, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
        nn.ConvTranspose2d(width, 3, 4, 2, 1, bias=False), nn.Tanh(),
    )  # fmt: skip
    discriminator = nn.Sequential(
        nn.Conv2d(3, width, 4, 2, 1, bias=False), nn.LeakyReLU(0.2),
        nn.Conv2d(width, 2 * width, 4, 2, 1, bias=False), nn.BatchNorm2d(2 * width), nn.LeakyReLU(0.2),
        nn.Conv2d(2 * width, 4 * width, 4, 2, 1, bias=False), nn.BatchNorm2d(4 * width), nn.LeakyReLU(0.2),
        nn.Conv2d(4 * width, 1, 4, 1, 0, bias=False), nn.Sigmoid(), nn.Flatten(),
    )  # fmt: skip
    same_weights(lib, generator, discriminator)
    rng = _data(6)
    real = lib.tensor(rng.uniform(-1, 1, (batch, 3, 32, 32)).astype(np.float32))
    noise = lib.tensor(rng.standard_normal((batch, 64, 1, 1)).astype(np.float32))
    ones, zeros = lib.ones(batch, 1), lib.zeros(batch, 1)
    opt_d = lib.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_g = lib.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    d_loss_of = compile_fn(
        lambda real, fake: fn.binary_cross_entropy(discriminator(real), ones)
        + fn.binary_cross_entropy(discriminator(fake), zeros)
    )
    g_loss_of = compile_fn(lambda noise: fn.binary_cross_entropy(discriminator(generator(noise)), ones))

    def step() -> None:
        opt_d.zero_grad()
        d_loss_of(real, generator(noise).detach()).backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss_of(noise).backward()
        opt_g.step()

    return step


def vae(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """The VAE example: 784-400-(20, 20), reparameterised with fixed noise, 20-400-784 sigmoid;
    binary cross-entropy (sum) + KL divergence; batch 128."""
    nn, fn = lib.nn, lib.nn.functional
    batch = 4 if quick else 128
    encoder, mean, log_var = nn.Linear(784, 400), nn.Linear(400, 20), nn.Linear(400, 20)
    decoder = nn.Sequential(nn.Linear(20, 400), nn.ReLU(), nn.Linear(400, 784), nn.Sigmoid())
    modules = [encoder, mean, log_var, decoder]
    same_weights(lib, *modules)
    rng = _data(7)
    x = lib.tensor(rng.uniform(0, 1, (batch, 784)).astype(np.float32))
    eps = lib.tensor(rng.standard_normal((batch, 20)).astype(np.float32))

    def loss_of(x: Any, eps: Any) -> Any:
        hidden = fn.relu(encoder(x))
        mu, logvar = mean(hidden), log_var(hidden)
        recon = decoder(mu + eps * (0.5 * logvar).exp())
        kld = -0.5 * (1 + logvar - mu * mu - logvar.exp()).sum()
        return fn.binary_cross_entropy(recon, x, reduction="sum") + kld

    return _adam_step(lib, modules, compile_fn(loss_of), x, eps)


def super_resolution(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """The super_resolution example (upscale 3): conv 5x5 64, conv 3x3 64, conv 3x3 32, conv 3x3 9,
    PixelShuffle(3); MSE against a 96x96 target; 16x1x32x32."""
    nn, fn = lib.nn, lib.nn.functional
    batch, size = (2, 8) if quick else (16, 32)
    model = nn.Sequential(
        nn.Conv2d(1, 64, 5, padding=2), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
        nn.Conv2d(64, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 9, 3, padding=1), nn.PixelShuffle(3),
    )  # fmt: skip
    same_weights(lib, model)
    rng = _data(8)
    x = lib.tensor(rng.uniform(0, 1, (batch, 1, size, size)).astype(np.float32))
    target = lib.tensor(rng.uniform(0, 1, (batch, 1, 3 * size, 3 * size)).astype(np.float32))
    return _adam_step(lib, [model], compile_fn(lambda x, t: fn.mse_loss(model(x), t)), x, target)


def style_transfer(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A fast-neural-style transformer net, shrunk: conv 9x9 16, two stride-2 convs (32, 64) with
    InstanceNorm2d, two residual blocks, two nearest Upsample(2) + conv, conv 9x9 3; MSE against a
    target image (the perceptual loss's VGG left out); 4x3x64x64."""
    nn, fn = lib.nn, lib.nn.functional
    batch, size = (1, 16) if quick else (4, 64)

    def conv(c_in: int, c_out: int, k: int, stride: int = 1) -> list:
        return [nn.Conv2d(c_in, c_out, k, stride, k // 2), nn.InstanceNorm2d(c_out, affine=True), nn.ReLU()]

    class Residual(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.body = nn.Sequential(*conv(c, c, 3), nn.Conv2d(c, c, 3, 1, 1), nn.InstanceNorm2d(c, affine=True))

        def forward(self, x: Any) -> Any:
            return x + self.body(x)

    model = nn.Sequential(
        *conv(3, 16, 9), *conv(16, 32, 3, 2), *conv(32, 64, 3, 2), Residual(64), Residual(64),
        nn.Upsample(scale_factor=2, mode="nearest"), *conv(64, 32, 3),
        nn.Upsample(scale_factor=2, mode="nearest"), *conv(32, 16, 3), nn.Conv2d(16, 3, 9, 1, 4),
    )  # fmt: skip
    same_weights(lib, model)
    rng = _data(9)
    x = lib.tensor(rng.uniform(0, 1, (batch, 3, size, size)).astype(np.float32))
    target = lib.tensor(rng.uniform(0, 1, (batch, 3, size, size)).astype(np.float32))
    return _adam_step(lib, [model], compile_fn(lambda x, t: fn.mse_loss(model(x), t)), x, target)


def per_sample_grads(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """Per-sample gradients of an MLP 784-128-10 through vmap(grad(functional_call)) (the
    per_sample_grads tutorial), batch 64; the step computes them and their mean norm."""
    nn, fn = lib.nn, lib.nn.functional
    func = lib.func
    batch = 4 if quick else 64
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    same_weights(lib, model)
    params = {k: v.detach() for k, v in model.named_parameters()}
    rng = _data(10)
    x = lib.tensor(rng.standard_normal((batch, 784)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, (batch,)))

    def loss_of(params: dict, sample: Any, target: Any) -> Any:
        out = func.functional_call(model, params, (sample.unsqueeze(0),))
        return fn.cross_entropy(out, target.unsqueeze(0))

    grads_of = compile_fn(lambda x, y: func.vmap(func.grad(loss_of), in_dims=(None, 0, 0))(params, x, y)["0.weight"])

    def step() -> None:
        grads_of(x, y).square().sum().item()

    return step


def gcn(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A two-layer graph convolutional network (Kipf & Welling; PyG's gcn example) on a random
    graph of 1024 nodes with a dense normalised adjacency: A relu(A X W1) W2, 64 features, 32
    hidden, 7 classes; cross-entropy on every node."""
    nn, fn = lib.nn, lib.nn.functional
    nodes, features = (16, 8) if quick else (1024, 64)
    rng = _data(11)
    adjacency = (rng.uniform(0, 1, (nodes, nodes)) < 8 / nodes).astype(np.float32)
    adjacency = np.maximum(adjacency, adjacency.T) + np.eye(nodes, dtype=np.float32)
    scale = 1 / np.sqrt(adjacency.sum(1))
    a_hat = lib.tensor((adjacency * scale[:, None] * scale[None, :]).astype(np.float32))
    layer1, layer2 = nn.Linear(features, 32), nn.Linear(32, 7)
    same_weights(lib, layer1, layer2)
    x = lib.tensor(rng.standard_normal((nodes, features)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 7, (nodes,)))

    def loss_of(x: Any, y: Any) -> Any:
        hidden = fn.relu(a_hat @ layer1(x))
        return fn.cross_entropy(a_hat @ layer2(hidden), y)

    return _adam_step(lib, [layer1, layer2], compile_fn(loss_of), x, y)


def mobilenet(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """MobileNetV2-style: stem conv 16, inverted residuals (1x1 expand x4, 3x3 depthwise, 1x1
    project, BatchNorm and ReLU6; stride 1 blocks add their input) at 24, 32 and 64 channels,
    global average pool, Linear; 32x3x32x32."""
    nn, fn = lib.nn, lib.nn.functional
    batch, size = (2, 8) if quick else (32, 32)

    class InvertedResidual(nn.Module):
        def __init__(self, c_in: int, c_out: int, stride: int) -> None:
            super().__init__()
            mid = 4 * c_in
            self.residual = stride == 1 and c_in == c_out
            self.body = nn.Sequential(
                nn.Conv2d(c_in, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU6(),
                nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid), nn.ReLU6(),
                nn.Conv2d(mid, c_out, 1, bias=False), nn.BatchNorm2d(c_out),
            )  # fmt: skip

        def forward(self, x: Any) -> Any:
            return x + self.body(x) if self.residual else self.body(x)

    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU6(),
        InvertedResidual(16, 24, 2), InvertedResidual(24, 24, 1), InvertedResidual(24, 32, 2),
        InvertedResidual(32, 64, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    )  # fmt: skip
    same_weights(lib, model)
    rng = _data(16)
    x = lib.tensor(rng.standard_normal((batch, 3, size, size)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, (batch,)))
    loss_of = compile_fn(lambda x, y: fn.cross_entropy(model(x), y))
    return _adam_step(lib, [model], loss_of, x, y)


WORKLOADS: dict[str, Callable[..., Callable[[], None]]] = {
    f.__name__: f
    for f in (
        char_lstm, char_gru, rnn_tanh, word_lstm, word_transformer, min_gpt, cifar_bn, cnn3d, resnet, dcgan, vae, super_resolution,
        style_transfer, per_sample_grads, gcn, mobilenet,
    )
}  # fmt: skip
"""Every workload by name, in the order bench_models.py reports them."""

# The further families (benchmarks/_models_more.py, then _models_extra.py, _models_gaps.py and _models_higher.py) report
# after these; those modules build on this one.
from _models_extra import EXTRA_WORKLOADS  # noqa: E402
from _models_gaps import GAP_WORKLOADS  # noqa: E402
from _models_higher import HIGHER_WORKLOADS  # noqa: E402
from _models_more import MORE_WORKLOADS  # noqa: E402

WORKLOADS.update(MORE_WORKLOADS)
WORKLOADS.update(EXTRA_WORKLOADS)
WORKLOADS.update(GAP_WORKLOADS)
WORKLOADS.update(HIGHER_WORKLOADS)
