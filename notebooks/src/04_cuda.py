# %% [markdown]
# # The same model on `device="cuda"`
#
# numdiff's CUDA backend compiles its kernels with `numba.cuda`. Moving work to the GPU is
# PyTorch's: `model.to("cuda")`, `x.to("cuda")`, and everything after runs there, backward and
# the optimizer included.
#
# This notebook runs on a **real GPU** when the machine has one. Without one it runs on **Numba's
# CUDA simulator**, which executes the very same kernel code in Python threads on the CPU: the
# results are real and checked against the CPU, but a simulated step takes seconds, so the model
# is narrower, the data tiny, and timings mean nothing. The simulator must be switched on
# (`NUMBA_ENABLE_CUDASIM=1`) **before numba is imported**, so the first cell asks a separate
# Python process whether numba sees a GPU, then decides, before `import numdiff`.
#
# The output below says which of the two it ran on.

# %%
import os
import subprocess
import sys
import time


def numba_sees_a_gpu() -> bool:
    """Ask another Python process: importing numba here would fix the choice too early."""
    probe = "from numba import cuda; print(cuda.is_available())"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    return result.stdout.strip() == "True"


if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" and not numba_sees_a_gpu():
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # must happen before numba is imported

import numpy as np  # noqa: E402 - after choosing the CUDA mode
from sklearn.datasets import load_digits  # noqa: E402

try:
    import numdiff
except ImportError:  # running from a clone without `pip install -e .`
    sys.path.insert(0, os.path.abspath(".."))
    import numdiff

from numba import cuda  # noqa: E402

from numdiff import nn  # noqa: E402

SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
print("numdiff", numdiff.__version__, "| numdiff.cuda.is_available():", numdiff.cuda.is_available())
if SIMULATED:
    print("No GPU found: running on Numba's CUDA SIMULATOR (real results, tiny sizes, no speed).")
else:
    name = cuda.get_current_device().name
    print("Running on a real GPU:", name.decode() if isinstance(name, bytes) else name)

# %% [markdown]
# ## Tensors on the device
#
# `.to("cuda")` copies a tensor to the GPU; ops on CUDA tensors run CUDA kernels and return CUDA
# tensors; `.cpu()` (or `.item()`) brings results back. Mixing devices in one op is an error that
# names both devices.

# %%
a = numdiff.randn(3, 4)
a_gpu = a.to("cuda")
result = (a_gpu * 2 + 1).exp().sum()
print(result.device, "->", result.cpu())
print("same as on the CPU:", (a * 2 + 1).exp().sum().item())
try:
    a_gpu + a
except RuntimeError as error:
    print(f"{type(error).__name__}: {error}")

# %% [markdown]
# ## The digits CNN on the device
#
# The model of `02_train_cnn.ipynb` on the 8 x 8 digits: two 3 x 3 convolutions with ReLU and
# 2 x 2 max-pooling, then a linear layer. On a GPU it has its full width (16 and 32 channels) and
# trains on 1,400 images; on the simulator it has 4 and 8 channels and sees four images.


# %%
class DigitsCNN(nn.Module):
    def __init__(self, channels: tuple[int, int] = (16, 32)) -> None:
        super().__init__()
        c1, c2 = channels
        self.features = nn.Sequential(
            nn.Conv2d(1, c1, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(c2 * 2 * 2, 10)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


digits = load_digits()
images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]  # (N, 1, 8, 8) in [0, 1]
labels = digits.target.astype(np.int64)
if SIMULATED:
    channels, n_train, batch, steps = (4, 8), 4, 4, 1
else:
    channels, n_train, batch, steps = (16, 32), 1400, 64, 300
x_train, y_train = numdiff.tensor(images[:n_train]), numdiff.tensor(labels[:n_train])
print(f"model channels {channels}, {n_train} training images, batches of {batch}")

# %% [markdown]
# First the check that matters: from the same weights, one training step (forward, cross-entropy,
# backward, Adam update) gives the same loss, the same gradients and the same updated weights on
# the device as on the CPU.

# %%
numdiff.manual_seed(0)
cpu_model = DigitsCNN(channels)
gpu_model = DigitsCNN(channels)
gpu_model.load_state_dict(cpu_model.state_dict())
gpu_model.to("cuda")
cpu_optimizer = numdiff.optim.Adam(cpu_model.parameters(), lr=3e-3)
gpu_optimizer = numdiff.optim.Adam(gpu_model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()
xb, yb = x_train[:batch], y_train[:batch]


def train_step(model, optimizer, x, y):
    loss = loss_fn(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


cpu_loss = train_step(cpu_model, cpu_optimizer, xb, yb)
start = time.perf_counter()
gpu_loss = train_step(gpu_model, gpu_optimizer, xb.to("cuda"), yb.to("cuda"))
print(f"loss on cpu {cpu_loss.item():.6f}, on {gpu_loss.device} {gpu_loss.item():.6f}")
print(
    f"the first device step took {time.perf_counter() - start:.2f} s (on a GPU: compiling the kernels included)"
)

worst_grad = worst_weight = 0.0
for p_cpu, p_gpu in zip(cpu_model.parameters(), gpu_model.parameters()):
    assert p_gpu.device.type == "cuda" and p_gpu.grad.device.type == "cuda"
    worst_grad = max(worst_grad, float(np.abs(p_cpu.grad.numpy() - p_gpu.grad.cpu().numpy()).max()))
    worst_weight = max(
        worst_weight, float(np.abs(p_cpu.detach().numpy() - p_gpu.detach().cpu().numpy()).max())
    )
print(f"largest difference over all parameters: gradient {worst_grad:.1e}, updated weight {worst_weight:.1e}")
assert abs(cpu_loss.item() - gpu_loss.item()) < 1e-4 and worst_grad < 1e-4 and worst_weight < 1e-4

# %% [markdown]
# Now more steps on the device alone. The parameters, their gradients and Adam's state never leave
# the GPU; only the loss comes back, as a Python number, to be printed.

# %%
x_dev, y_dev = x_train.to("cuda"), y_train.to("cuda")
losses = [gpu_loss.item()]
start = time.perf_counter()
for _ in range(steps):
    index = numdiff.randperm(n_train)[:batch].to("cuda")
    losses.append(train_step(gpu_model, gpu_optimizer, x_dev[index], y_dev[index]).item())
seconds_per_step = (time.perf_counter() - start) / steps
every = max(1, len(losses) // 10)
label = "loss per step" if every == 1 else f"loss every {every} steps"
print(f"{label}:", " ".join(f"{v:.3f}" for v in losses[::every]), f"(last: {losses[-1]:.3f})")
print(f"{seconds_per_step:.3g} s per step on", "the simulator" if SIMULATED else "the GPU")
state = gpu_optimizer.state[gpu_model.classifier.weight]
print("Adam's moment estimates live on:", state["exp_avg"].device, "and", state["exp_avg_sq"].device)

# %% [markdown]
# On a GPU, the trained model classifies the held-out digits (the images after the first 1,400),
# predicting on the device and bringing only the answers back. The simulator run stops here: four
# images and two steps say nothing about accuracy.

# %%
if SIMULATED:
    print("ran on: the CUDA simulator (CPU); held-out accuracy skipped")
else:
    gpu_model.eval()
    with numdiff.no_grad():
        predicted = gpu_model(numdiff.tensor(images[n_train:]).to("cuda")).argmax(1).cpu().numpy()
    print(f"accuracy on {len(predicted)} held-out images: {(predicted == labels[n_train:]).mean():.3f}")
    print("ran on: a real GPU")
