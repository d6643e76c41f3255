# %% [markdown]
# # Training a CNN on handwritten digits
#
# A small convolutional network learns scikit-learn's bundled 8 x 8 digits (1,797 images, no
# download). Everything is numdiff with PyTorch's API: `numdiff.nn` layers, `numdiff.optim.Adam`,
# `numdiff.utils.data.DataLoader`, `numdiff.save`/`numdiff.load`. Along the way: loss and accuracy
# curves, a confusion matrix, the digits the model gets wrong, and a checkpoint saved and loaded.
#
# The training code is plain PyTorch code: with `import torch` in place of `import numdiff` it runs
# unchanged. `examples/train_digits.py` is the script version, which also trains the same model
# with PyTorch from the same weights and compares the two.

# %%
import os
import sys
import tempfile
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

try:
    import numdiff
except ImportError:  # running from a clone without `pip install -e .`
    sys.path.insert(0, os.path.abspath(".."))
    import numdiff

from numdiff import nn
from numdiff.utils.data import DataLoader, TensorDataset

SMALL = os.environ.get("NUMDIFF_NOTEBOOK_SMALL") == "1"  # CI runs this notebook with tiny sizes
EPOCHS = 2 if SMALL else 15
numdiff.manual_seed(0)  # the same weights and batch order on every run
print("numdiff", numdiff.__version__)

# %% [markdown]
# ## The data
#
# Pixel values run from 0 to 16; we scale them to [0, 1] and shape each image as
# (channels=1, 8, 8), the layout conv layers expect. A stratified split keeps 20% of the images
# for testing.

# %%
digits = load_digits()
images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]  # (N, 1, 8, 8)
labels = digits.target.astype(np.int64)
x_train, x_test, y_train, y_test = train_test_split(
    images, labels, test_size=0.2, random_state=0, stratify=labels
)
if SMALL:
    x_train, y_train, x_test, y_test = x_train[:256], y_train[:256], x_test[:128], y_test[:128]

train_set = TensorDataset(numdiff.tensor(x_train), numdiff.tensor(y_train))
test_x, test_y = numdiff.tensor(x_test), numdiff.tensor(y_test)
train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
print(f"{len(train_set)} training images, {len(y_test)} test images, shape {tuple(test_x.shape[1:])}")

fig, axes = plt.subplots(1, 10, figsize=(10, 1.4))
for digit, ax in enumerate(axes):
    ax.imshow(x_train[y_train == digit][0, 0], cmap="gray_r")
    ax.set_title(str(digit))
    ax.axis("off")
plt.show()

# %% [markdown]
# ## The model
#
# Two 3 x 3 convolutions, each followed by ReLU and 2 x 2 max-pooling (8 x 8 -> 4 x 4 -> 2 x 2),
# then one linear layer to the 10 classes. The loss is cross-entropy on the raw scores (logits).


# %%
class DigitsCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


model = DigitsCNN()
print(model)
print("parameters:", sum(p.numel() for p in model.parameters()))

# %% [markdown]
# ## Training
#
# The standard loop: forward, loss, `zero_grad`, `backward`, `step`. Each epoch we record the
# training loss and the accuracy on the held-out test images (under `no_grad`, so evaluation
# records no graph).


# %%
def accuracy(model, x, y):
    model.eval()
    with numdiff.no_grad():
        predicted = model(x).argmax(1)
    model.train()
    return (predicted == y).float().mean().item()


optimizer = numdiff.optim.Adam(model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()
history = {"loss": [], "train acc": [], "test acc": []}
start = time.perf_counter()
for epoch in range(EPOCHS):
    total, count = 0.0, 0
    for xb, yb in train_loader:
        loss = loss_fn(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * len(yb)
        count += len(yb)
    history["loss"].append(total / count)
    history["train acc"].append(accuracy(model, train_set.tensors[0], train_set.tensors[1]))
    history["test acc"].append(accuracy(model, test_x, test_y))
    print(
        f"epoch {epoch + 1:2d}: loss {history['loss'][-1]:.4f}  "
        f"train acc {history['train acc'][-1]:.3f}  test acc {history['test acc'][-1]:.3f}"
    )
print(f"{(time.perf_counter() - start) / EPOCHS:.2f} s per epoch")

# %%
fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 3.5))
epochs = np.arange(1, EPOCHS + 1)
ax_loss.plot(epochs, history["loss"], "-o")
ax_loss.set(xlabel="epoch", ylabel="cross-entropy", title="training loss")
ax_acc.plot(epochs, history["train acc"], "-o", label="train")
ax_acc.plot(epochs, history["test acc"], "-s", label="test")
ax_acc.set(xlabel="epoch", ylabel="accuracy", title="accuracy", ylim=(0, 1.02))
ax_acc.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Where it goes wrong: the confusion matrix
#
# Row = true digit, column = predicted digit. The diagonal counts correct answers; anything off
# the diagonal is a confusion (classically 8 against 1 or 9, and 3 against 5).

# %%
model.eval()
with numdiff.no_grad():
    test_logits = model(test_x)
predicted = test_logits.argmax(1).numpy()
confusion = np.zeros((10, 10), dtype=int)
np.add.at(confusion, (y_test, predicted), 1)

fig, ax = plt.subplots(figsize=(5, 5))
ax.imshow(confusion, cmap="Blues")
for i in range(10):
    for j in range(10):
        if confusion[i, j]:
            color = "white" if confusion[i, j] > confusion.max() / 2 else "black"
            ax.text(j, i, confusion[i, j], ha="center", va="center", color=color, fontsize=8)
ax.set(xticks=range(10), yticks=range(10), xlabel="predicted", ylabel="true", title="confusion matrix")
plt.show()
print(f"test accuracy {np.trace(confusion) / confusion.sum():.3f}")

# %% [markdown]
# ## The misclassified digits
#
# Each title reads *true -> predicted (confidence)*. Many of these are hard for a person too.

# %%
wrong = np.flatnonzero(predicted != y_test)
probabilities = test_logits.softmax(1).numpy()
shown = wrong[:12]
if len(shown) == 0:
    print("no test digit is misclassified")
else:
    fig, axes = plt.subplots(1, len(shown), figsize=(1.2 * len(shown), 1.8), squeeze=False)
    for ax, index in zip(axes[0], shown):
        ax.imshow(x_test[index, 0], cmap="gray_r")
        ax.set_title(f"{y_test[index]}->{predicted[index]}\n({probabilities[index].max():.2f})", fontsize=9)
        ax.axis("off")
    plt.show()
print(f"{len(wrong)} of {len(y_test)} test digits misclassified")

# %% [markdown]
# ## A checkpoint: save, load, and check it predicts the same
#
# `numdiff.save` writes the model's `state_dict()` (and the optimizer's, to resume training);
# `numdiff.load` reads it back into a fresh model.

# %%
with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "digits_cnn.ckpt")
    numdiff.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": EPOCHS}, path)
    print(f"checkpoint: {os.path.getsize(path) / 1024:.1f} KiB")
    checkpoint = numdiff.load(path)

restored = DigitsCNN()
restored.load_state_dict(checkpoint["model"])
restored.eval()
with numdiff.no_grad():
    restored_logits = restored(test_x)
same = numdiff.allclose(restored_logits, test_logits)
print("restored model gives identical logits:", same)
print(f"restored test accuracy: {accuracy(restored, test_x, test_y):.3f} after epoch {checkpoint['epoch']}")
assert same
