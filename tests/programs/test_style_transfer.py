"""Fast style transfer, written as a PyTorch program and run on numdiff. Stands for pytorch/examples'
fast_neural_style (training): an image transformation network (reflection-padded convolutions,
``InstanceNorm2d(affine=True)``, residual blocks, nearest-neighbour upsampling) is trained
against a frozen feature extractor (``requires_grad_(False)``) with a content loss on features
and a style loss on their Gram matrices (``bmm`` of features with their transpose).

Data: smooth synthetic 16x16 images, and a striped style image. The style loss must fall to a
small fraction of its start while the content loss stays bounded.

Run as a script (``python3 tests/programs/test_style_transfer.py SEED``) to print the final
style loss (the corpus runner compares it with PyTorch's).
"""

from __future__ import annotations

import sys

import numpy as np

import numdiff as torch
import numdiff.nn as nn


def gram_matrix(y):
    b, ch, h, w = y.size()
    features = y.view(b, ch, w * h)
    return features.bmm(features.transpose(1, 2)) / (ch * h * w)


class ConvLayer(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1):
        super().__init__()
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        return self.conv2d(self.reflection_pad(x))


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1, self.in1 = ConvLayer(channels, channels, 3), nn.InstanceNorm2d(channels, affine=True)
        self.conv2, self.in2 = ConvLayer(channels, channels, 3), nn.InstanceNorm2d(channels, affine=True)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.in2(self.conv2(self.relu(self.in1(self.conv1(x))))) + x


class TransformerNet(nn.Module):
    def __init__(self, width: int = 16):
        super().__init__()
        self.down = nn.Sequential(ConvLayer(3, width, 5), nn.InstanceNorm2d(width, affine=True), nn.ReLU(),
                                  ConvLayer(width, width, 3, stride=2), nn.InstanceNorm2d(width, affine=True),
                                  nn.ReLU())
        self.res = nn.Sequential(ResidualBlock(width), ResidualBlock(width))
        self.up = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), ConvLayer(width, width, 3),
                                nn.InstanceNorm2d(width, affine=True), nn.ReLU(), ConvLayer(width, 3, 5))

    def forward(self, x):
        return self.up(self.res(self.down(x)))


def features_net():
    """A frozen random feature extractor: two conv stages whose outputs carry content and style."""
    net = nn.ModuleList([nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU()),
                         nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU())])
    return net.requires_grad_(False)


def extract(net, x):
    out = []
    for stage in net:
        x = stage(x)
        out.append(x)
    return out


def images(n: int, rng: np.random.Generator):
    yy, xx = np.mgrid[0:16, 0:16] / 16.0
    a = rng.random((n, 3, 3)) * 4
    x = 0.5 + 0.4 * np.sin(a[..., 0, None, None] * xx + a[..., 1, None, None] * yy + a[..., 2, None, None])
    return torch.tensor(x.astype(np.float32))


def train(steps: int, seed: int = 0) -> tuple[float, float, float]:
    """Train for `steps` batches; return (first style loss, last style loss, last content loss)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    transformer, vgg = TransformerNet(), features_net()
    optimizer = torch.optim.Adam(transformer.parameters(), lr=3e-3)
    mse_loss = nn.MSELoss()
    stripes = np.zeros((1, 3, 16, 16), dtype=np.float32)
    stripes[:, :, :, ::4] = 1.0
    stripes[:, 0, ::4, :] = 1.0
    gram_style = [gram_matrix(y) for y in extract(vgg, torch.tensor(stripes))]
    content_weight, style_weight = 1.0, 1e3
    history = []
    for _ in range(steps):
        x = images(4, rng)
        optimizer.zero_grad()
        y = transformer(x)
        features_y, features_x = extract(vgg, y), extract(vgg, x)
        content_loss = content_weight * mse_loss(features_y[1], features_x[1])
        style_loss = 0.0
        for ft_y, gm_s in zip(features_y, gram_style):
            style_loss = style_loss + mse_loss(gram_matrix(ft_y), gm_s.expand(x.size(0), -1, -1))
        style_loss = style_loss * style_weight
        (content_loss + style_loss).backward()
        optimizer.step()
        history.append((style_loss.item(), content_loss.item()))
    return history[0][0], history[-1][0], history[-1][1]


def test_the_transformer_learns_the_style_and_keeps_content_bounded():
    first_style, last_style, last_content = train(steps=40)
    assert last_style < 0.3 * first_style
    assert np.isfinite(last_content) and last_content < first_style


if __name__ == "__main__":
    print("RESULT", train(steps=100, seed=int(sys.argv[1]) if len(sys.argv) > 1 else 0)[1])
