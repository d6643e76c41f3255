# %% [markdown]
# # The same model on `device="cuda"`
#
# numdiff's CUDA backend compiles its kernels with `numba.cuda`. Moving work to the GPU is
# PyTorch's: `model.to("cuda")`, `x.to("cuda")`, and everything after runs there, backward
# included.
#
# This notebook runs on a **real GPU** when the machine has one. Without one it runs on **Numba's
# CUDA simulator**, which executes the very same kernel code in Python threads on the CPU: the
# results are real and checked, but the simulator is thousands of times slower than a GPU, so the
# sizes here are tiny and the timings mean nothing. The simulator must be switched on
# (`NUMBA_ENABLE_CUDASIM=1`) **before numba is imported**, so the first cell decides, before
# `import numdiff`.

# %%
import os
import shutil
import sys

HAVE_GPU = shutil.which("nvidia-smi") is not None or os.path.exists("/proc/driver/nvidia/version")
if not HAVE_GPU:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # must happen before numba is imported

import numpy as np  # noqa: E402 - after choosing the CUDA mode

try:
    import numdiff
except ImportError:  # running from a clone without `pip install -e .`
    sys.path.insert(0, os.path.abspath(".."))
    import numdiff

from numdiff import nn  # noqa: E402

SMALL = os.environ.get("NUMDIFF_NOTEBOOK_SMALL") == "1"  # CI runs this notebook with tiny sizes
SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
print("numdiff.cuda.is_available():", numdiff.cuda.is_available())
if SIMULATED:
    print("No GPU found: running on Numba's CUDA SIMULATOR (real results, tiny sizes, no speed).")
else:
    from numba import cuda

    print("Running on a real GPU:", cuda.get_current_device().name.decode())

# %% [markdown]
# ## Tensors on the device
#
# `.to("cuda")` copies a tensor to the GPU; ops on CUDA tensors run CUDA kernels and return CUDA
# tensors; `.cpu()` (or `.numpy()`, which goes through the host) brings results back. Mixing
# devices in one op is an error that names both devices.

# %%
a = numdiff.randn(3, 4)
a_gpu = a.to("cuda")
print(a_gpu.device, "->", (a_gpu * 2 + 1).exp().sum().cpu())
print("same as on the CPU:", ((a * 2 + 1).exp().sum()).item())
try:
    a_gpu + a
except RuntimeError as error:
    print(f"{type(error).__name__}: {error}")

# %% [markdown]
# ## The digits CNN, trained on the device
#
# The model of `02_train_cnn.ipynb`, on the 8 x 8 digits. On the simulator we train on a handful
# of images for a couple of steps; on a GPU, a few full epochs.


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


from sklearn.datasets import load_digits  # noqa: E402

digits = load_digits()
images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
labels = digits.target.astype(np.int64)
n_train, steps, batch = (16, 2, 8) if SIMULATED or SMALL else (1400, 200, 64)
x_all, y_all = numdiff.tensor(images[:n_train]), numdiff.tensor(labels[:n_train])

# %% [markdown]
# First the check that matters: one forward and backward pass gives the same loss and the same
# gradients on the device as on the CPU, starting from the same weights.

# %%
numdiff.manual_seed(0)
cpu_model = DigitsCNN()
gpu_model = DigitsCNN()
gpu_model.load_state_dict(cpu_model.state_dict())
gpu_model.to("cuda")
loss_fn = nn.CrossEntropyLoss()
xb, yb = x_all[:batch], y_all[:batch]

cpu_loss = loss_fn(cpu_model(xb), yb)
cpu_loss.backward()
gpu_loss = loss_fn(gpu_model(xb.to("cuda")), yb.to("cuda"))
gpu_loss.backward()

print(f"loss on cpu {cpu_loss.item():.6f}, on cuda {gpu_loss.item():.6f}")
worst = 0.0
for p_cpu, p_gpu in zip(cpu_model.parameters(), gpu_model.parameters()):
    assert p_gpu.device.type == "cuda" and p_gpu.grad.device.type == "cuda"
    worst = max(worst, float(np.abs(p_cpu.grad.numpy() - p_gpu.grad.cpu().numpy()).max()))
print(f"largest gradient difference over all parameters: {worst:.2e}")
assert abs(cpu_loss.item() - gpu_loss.item()) < 1e-4 and worst < 1e-3

# %% [markdown]
# Now a few optimisation steps on the device. The loss should go down; the parameters and the
# optimizer's state never leave the GPU.

# %%
optimizer = numdiff.optim.Adam(gpu_model.parameters(), lr=3e-3)
x_dev, y_dev = x_all.to("cuda"), y_all.to("cuda")
losses = []
for _ in range(steps):
    index = numdiff.randint(0, n_train, (batch,))
    loss = loss_fn(gpu_model(x_dev[index.to("cuda")]), y_dev[index.to("cuda")])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("loss per step:", " ".join(f"{v:.3f}" for v in losses[:: max(1, steps // 10)]))
gpu_model.eval()
with numdiff.no_grad():
    predicted = gpu_model(x_dev).argmax(1).cpu().numpy()
print(f"accuracy on the {n_train} training images: {(predicted == labels[:n_train]).mean():.3f}")
print("ran on:", "the CUDA simulator (CPU)" if SIMULATED else "a real GPU")
