"""PyTorch's "Learn the Basics" series as one program, run on numdiff and on torch from the same
weights: a custom Dataset whose transforms are written by hand (uint8 images scaled to [0, 1], the
transforms tutorial's ``Lambda`` one-hot target ``zeros(10).scatter_(0, tensor(y), value=1)``), a
DataLoader, the build-model tutorial's ``Flatten`` + ``Linear``/``ReLU`` stack, the optimization
tutorial's train and test loops (cross entropy on the one-hot probabilities, SGD), then save and load
of the state dict, and the autograd tutorial's ``.data`` warning (a write through ``.data`` is not
seen by autograd). Stands for probe12's basics programs; the one-hot transform raised on numdiff
("index has 0 dims"), and so did the ``.data`` example.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

RNG = np.random.default_rng(12)
IMAGES = RNG.integers(0, 256, size=(96, 1, 6, 6)).astype(np.uint8)
# A label the pixels decide, so the model can learn it: which quarter of the image is brightest.
LABELS = IMAGES[:, 0].reshape(96, 2, 3, 2, 3).sum(axis=(2, 4)).reshape(96, 4).argmax(axis=1)
WEIGHTS = {
    "linear_relu_stack.0.weight": RNG.uniform(-0.3, 0.3, (32, 36)),
    "linear_relu_stack.0.bias": RNG.uniform(-0.3, 0.3, 32),
    "linear_relu_stack.2.weight": RNG.uniform(-0.3, 0.3, (10, 32)),
    "linear_relu_stack.2.bias": RNG.uniform(-0.3, 0.3, 10),
}


def basics(torch, tmp_path) -> tuple[list[float], dict, list[float]]:
    nn = torch.nn
    from_lib = torch.utils.data

    class ImageDataset(from_lib.Dataset):
        def __init__(self, images, labels, transform=None, target_transform=None):
            self.images, self.labels = images, labels
            self.transform, self.target_transform = transform, target_transform

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, idx):
            image, label = torch.tensor(self.images[idx]), int(self.labels[idx])
            if self.transform:
                image = self.transform(image)
            if self.target_transform:
                label = self.target_transform(label)
            return image, label

    def to_tensor(image):
        return image.float().div(255)

    def one_hot(y):
        return torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1)

    class NeuralNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.linear_relu_stack = nn.Sequential(nn.Linear(36, 32), nn.ReLU(), nn.Linear(32, 10))

        def forward(self, x):
            return self.linear_relu_stack(self.flatten(x))

    train = ImageDataset(IMAGES[:64], LABELS[:64], to_tensor, one_hot)
    test = ImageDataset(IMAGES[64:], LABELS[64:], to_tensor, one_hot)
    train_loader = from_lib.DataLoader(train, batch_size=16)
    test_loader = from_lib.DataLoader(test, batch_size=16)
    model = NeuralNetwork()
    model.load_state_dict({name: torch.tensor(value, dtype=torch.float32) for name, value in WEIGHTS.items()})
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    log = []
    for _ in range(4):
        model.train()
        for x, y in train_loader:
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            log.append(loss.item())
        model.eval()
        test_loss, correct = 0.0, 0.0
        with torch.no_grad():
            for x, y in test_loader:
                pred = model(x)
                test_loss += loss_fn(pred, y).item()
                correct += (pred.argmax(1) == y.argmax(1)).type(torch.float).sum().item()
        log += [test_loss / len(test_loader), correct / len(test)]
    path = str(tmp_path / f"{torch.__name__}_weights.pth")
    torch.save(model.state_dict(), path)
    reloaded = NeuralNetwork()
    reloaded.load_state_dict(torch.load(path, weights_only=True))
    reloaded.eval()
    x, _ = next(iter(test_loader))
    log.append((reloaded(x) - model(x)).abs().max().item())

    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = a.sigmoid()
    out.data.zero_()  # hidden from autograd: backward multiplies by the zeroed output
    out.sum().backward()
    final = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    return log, final, a.grad.tolist()


def test_the_basics_learn_the_brightest_quarter(tmp_path):
    log, _, data_grad = basics(numdiff, tmp_path)
    train_losses = [log[i * 6 + j] for i in range(4) for j in range(4)]
    assert train_losses[-1] < 0.8 * train_losses[0], train_losses
    assert log[-1] == 0.0  # the reloaded model predicts what the saved one did
    assert data_grad == [0.0, 0.0, 0.0]


def test_the_basics_match_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    expected, expected_final, expected_grad = basics(torch, tmp_path)
    got, final, grad = basics(numdiff, tmp_path)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for name, value in expected_final.items():
        np.testing.assert_allclose(final[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
    assert grad == expected_grad
