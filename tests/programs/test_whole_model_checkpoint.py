"""A small super-resolution network trained, saved whole with ``torch.save(model, path)``, loaded
back with ``torch.load`` and used for inference, written as a PyTorch program and run on numdiff.
Stands for pytorch/examples' super_resolution (main.py saves the model object, super_resolve.py
loads it) and the tutorials' "save and load the entire model" recipe, including PyTorch 2.6's
weights-only default and its allow-list (``serialization.safe_globals``).

The loaded model must give the trained model's outputs exactly, and training must have raised
the PSNR by more than 3 dB (halved the error).
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import numdiff as torch
import numdiff.nn as nn


class Net(nn.Module):
    def __init__(self, upscale_factor=2):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 8, 3, padding=1)
        self.conv3 = nn.Conv2d(8, upscale_factor**2, 3, padding=1)
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        return self.pixel_shuffle(self.conv3(x))


def images(n=16, size=16, seed=0):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    out = []
    for _ in range(n):
        a = rng.random(3) * 6
        out.append(0.5 + 0.5 * np.sin(a[0] * xx + a[1] * yy + a[2]))
    high = torch.tensor(np.array(out, dtype=np.float32)[:, None])
    low = high[:, :, ::2, ::2]
    return low, high


def psnr(mse):
    return 10 * math.log10(1 / mse)


def test_a_whole_model_saved_and_loaded_gives_the_same_outputs(tmp_path):
    torch.manual_seed(0)
    low, high = images()
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.MSELoss()
    with torch.no_grad():
        start = psnr(float(criterion(model(low), high)))
    for _ in range(40):
        optimizer.zero_grad()
        loss = criterion(model(low), high)
        loss.backward()
        optimizer.step()
    assert psnr(float(loss)) > start + 3
    path = tmp_path / "model_epoch_1.pth"
    torch.save(model, path)
    with pytest.raises(pickle.UnpicklingError, match="weights_only=False"):
        torch.load(path)  # PyTorch 2.6+: whole objects need trust or an allow-list
    with torch.serialization.safe_globals([Net, nn.ReLU, nn.Conv2d, nn.PixelShuffle]):
        allowed = torch.load(path)
    trusted = torch.load(path, weights_only=False)
    with torch.no_grad():
        expected = model(low).numpy()
        np.testing.assert_array_equal(allowed(low).numpy(), expected)
        np.testing.assert_array_equal(trusted(low).numpy(), expected)
