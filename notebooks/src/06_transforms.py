# %% [markdown]
# # Function transforms: Hessians, per-sample gradients and a compiled activation
#
# `numdiff.func` has torch.func's transforms: `grad`, `vjp`, `jvp`, `jacrev`, `jacfwd`,
# `hessian`, `vmap` and `functional_call`. They compose: `hessian(f)` is `jacfwd(jacrev(f))`,
# and `vmap(grad(loss))` gives one gradient per example in one batched pass. `@numdiff.elementwise`
# turns a scalar Python function into a fused Numba kernel whose derivatives are derived for you.
#
# This notebook uses all three on small problems:
#
# 1. the Hessian of a spring chain's energy, whose eigenvalues are its vibration frequencies;
# 2. per-sample gradient norms of a classifier on the digits data set;
# 3. an activation function designed here, differentiated twice and plotted.

# %%
import math
import os
import sys
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

try:
    import numdiff
except ImportError:  # running from a clone without `pip install -e .`
    sys.path.insert(0, os.path.abspath(".."))
    import numdiff

from numdiff import func, nn
from numdiff.nn import functional as nnf

SMALL = os.environ.get("NUMDIFF_NOTEBOOK_SMALL") == "1"  # CI runs this notebook with tiny sizes
numdiff.manual_seed(0)
print("numdiff", numdiff.__version__)

# %% [markdown]
# ## 1. The Hessian of a physical energy
#
# Masses on a line joined by springs of stiffness $k$, the two ends tied to walls. With
# displacements $u_i$ the energy is $E(u) = \frac{k}{2}\sum_i (u_{i+1} - u_i)^2$ (walls at
# $u_0 = u_{n+1} = 0$), plus a small quartic term that makes the springs stiffen when stretched.
# At $u = 0$ the quartic term has no curvature, so the Hessian is the textbook stiffness matrix
# $k \cdot \mathrm{tridiag}(-1, 2, -1)$, and its eigenvalues are $k\,(2 - 2\cos(j\pi/(n+1)))$.

# %%
n_masses = 6
k = 3.0


def energy(u):
    padded = nnf.pad(u, (1, 1))  # the walls
    stretch = padded[1:] - padded[:-1]
    return 0.5 * k * (stretch**2).sum() + 0.1 * (stretch**4).sum()


u0 = numdiff.zeros(n_masses, dtype=numdiff.float64)
H = func.hessian(energy)(u0)
print(H)

eigenvalues = np.linalg.eigvalsh(H.numpy())
expected = k * (2 - 2 * np.cos(np.arange(1, n_masses + 1) * np.pi / (n_masses + 1)))
print("eigenvalues :", np.round(eigenvalues, 6))
print("analytic    :", np.round(np.sort(expected), 6))
assert np.allclose(eigenvalues, np.sort(expected))

# %% [markdown]
# Away from rest the quartic term matters and the Hessian changes. `jacfwd(jacrev(energy))`
# computes the same matrix as `hessian` (it is its definition), and the transforms nest further:
# `vmap(hessian(energy))` gives the Hessian at a whole batch of configurations at once.

# %%
u1 = numdiff.tensor(np.linspace(-0.5, 0.5, n_masses))
assert np.allclose(func.jacfwd(func.jacrev(energy))(u1).numpy(), func.hessian(energy)(u1).numpy())
configurations = numdiff.randn(4, n_masses, dtype=numdiff.float64) * 0.3
hessians = func.vmap(func.hessian(energy))(configurations)
print("batched Hessians:", tuple(hessians.shape))
print("lowest eigenvalue per configuration:", np.round(np.linalg.eigvalsh(hessians.numpy())[:, 0], 4))

# %% [markdown]
# ## 2. Per-sample gradient norms
#
# Training computes the gradient of the *mean* loss; the gradient of each example's own loss
# says which examples pull hardest on the weights (used for differential privacy, data
# debugging and importance sampling). `functional_call` runs the model with parameters passed as
# a dict, `grad` differentiates one example's loss with respect to that dict, and `vmap` maps it
# over the batch (`in_dims=(None, 0, 0)`: the parameters are shared, images and labels batched).

# %%
digits = load_digits()
images = (digits.data / 16.0).astype(np.float32)
labels = digits.target
n_train = 300 if SMALL else 1500
x_all, y_all = numdiff.tensor(images[:n_train]), numdiff.tensor(labels[:n_train])

model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
optimizer = numdiff.optim.SGD(model.parameters(), lr=0.5)
for _ in range(20 if SMALL else 100):
    optimizer.zero_grad()
    nnf.cross_entropy(model(x_all), y_all).backward()
    optimizer.step()
print("train loss", nnf.cross_entropy(model(x_all), y_all).item())


def example_loss(params, image, label):
    logits = func.functional_call(model, params, (image.unsqueeze(0),))
    return nnf.cross_entropy(logits, label.unsqueeze(0))


params = {name: p.detach() for name, p in model.named_parameters()}
start = time.perf_counter()
per_sample = func.vmap(func.grad(example_loss), in_dims=(None, 0, 0))(params, x_all, y_all)
elapsed = time.perf_counter() - start
norms = sum((g.reshape(n_train, -1) ** 2).sum(1) for g in per_sample.values()).sqrt()
print({name: tuple(g.shape) for name, g in per_sample.items()})
print(f"{n_train} per-sample gradients in {elapsed * 1e3:.0f} ms")

# %% [markdown]
# The same numbers, one backward pass per example (the slow way), for a few examples:

# %%
for i in range(3):
    model.zero_grad()
    nnf.cross_entropy(model(x_all[i : i + 1]), y_all[i : i + 1]).backward()
    loop_norm = math.sqrt(sum(float((p.grad**2).sum()) for p in model.parameters()))
    print(f"example {i}: vmap {norms[i].item():.6f}   loop {loop_norm:.6f}")
    assert abs(loop_norm - norms[i].item()) < 1e-4 * max(1.0, loop_norm)

# %%
norms_np = norms.numpy()
order = np.argsort(norms_np)[::-1]
fig, (ax_hist, *ax_top) = plt.subplots(1, 6, figsize=(12, 2.4), gridspec_kw={"width_ratios": [3, 1, 1, 1, 1, 1]})
ax_hist.hist(norms_np, bins=40, color="#4a7ebb")
ax_hist.set_xlabel("per-sample gradient norm")
ax_hist.set_yscale("log")
for ax, i in zip(ax_top, order[:5]):
    ax.imshow(images[i].reshape(8, 8), cmap="gray_r")
    ax.set_title(f"label {labels[i]}\nnorm {norms_np[i]:.2f}", fontsize=8)
    ax.axis("off")
plt.tight_layout()
plt.show()

# %% [markdown]
# The examples with the largest gradients are the ones the model gets most wrong: they are the
# first place to look for mislabeled or unusual data.
#
# ## 3. An activation function, compiled and differentiated
#
# A "soft clip": quadratic below zero, then a tanh that saturates between `lo` and `hi`. Written
# as plain scalar Python, `@numdiff.elementwise` compiles it into one Numba loop and derives the
# partial derivative for every argument, branch by branch. The backward pass is itself an
# `@elementwise` op, so second derivatives work too.

# %%
@numdiff.elementwise
def softclip(x, lo, hi):
    return lo + (hi - lo) * (math.tanh(x) + 1) / 2 if x > 0 else x * x


print("d/dx :", softclip.partial_source(0))
print("d/dhi:", softclip.partial_source(2))

# %%
xs = numdiff.linspace(-2.0, 3.0, 501, dtype=numdiff.float64, requires_grad=True)
ys = softclip(xs, -0.5, 1.5)
(dy,) = numdiff.autograd.grad(ys.sum(), xs, create_graph=True)
(d2y,) = numdiff.autograd.grad(dy.sum(), xs)
assert numdiff.autograd.gradgradcheck(softclip, (numdiff.randn(5, dtype=numdiff.float64, requires_grad=True), -0.5, 1.5))

fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(xs.detach().numpy(), ys.detach().numpy(), label="softclip(x, -0.5, 1.5)")
ax.plot(xs.detach().numpy(), dy.detach().numpy(), label="first derivative")
ax.plot(xs.detach().numpy(), d2y.numpy(), label="second derivative", linestyle="--")
ax.axhline(0, color="grey", linewidth=0.5)
ax.legend()
plt.show()

# %% [markdown]
# The jump at 0 is real: the function itself jumps there (from 0 to (lo + hi) / 2), so the
# derivative of each branch is exact on its side.
#
# Speed: the fused kernel makes one pass over memory for the forward and one per input for the
# backward, with no temporaries, where eager ops write a full-size temporary per operation. That
# wins for arithmetic-heavy functions (benchmarks/RESULTS.md: a 10-op function against torch's
# eager ops). Its transcendental calls (tanh here) run numdiff's vectorised math
# (numdiff/kernels/_vecmath.py), and the forward also writes the partial derivatives, so backward
# is one multiplication. NumPy's own tanh is hand-tuned SIMD, so on a function that is one tanh
# and nothing else the eager version can still be as fast. Measure your own function:

# %%
big = numdiff.randn(10**5 if SMALL else 10**6, requires_grad=True)
softclip(big, -0.5, 1.5).sum().backward()  # compiles for float32 once
start = time.perf_counter()
for _ in range(5):
    big.grad = None
    softclip(big, -0.5, 1.5).sum().backward()
fused = (time.perf_counter() - start) / 5
start = time.perf_counter()
for _ in range(5):
    big.grad = None
    numdiff.where(big > 0, -0.5 + 2.0 * (big.tanh() + 1) / 2, big * big).sum().backward()
eager = (time.perf_counter() - start) / 5
print(f"@elementwise: {fused * 1e3:.1f} ms   eager numdiff ops: {eager * 1e3:.1f} ms")
