# %% [markdown]
# # A Gaussian process, fitted through `numdiff.linalg`
#
# Gaussian-process regression is linear algebra: the kernel matrix K of the training inputs, its
# Cholesky factor L, and solves with L. Its hyperparameters (a length scale, a signal and a noise
# variance) are fitted by maximising the log marginal likelihood
#
#     log p(y) = -1/2 y^T K^-1 y - sum(log diag L) - n/2 log(2 pi),
#
# whose gradient flows through `linalg.cholesky` (backward: two triangular solves) and
# `cholesky_solve`. The same objective runs here eagerly, under `numdiff.compile` (one graph, no
# graph break) and in PyTorch, from the same data and starting point; the fits and their times
# are compared at the end.

# %%
import os
import sys
import time

import numpy as np

try:
    import numdiff
except ImportError:  # running from a clone without `pip install -e .`
    sys.path.insert(0, os.path.abspath(".."))
    import numdiff

import matplotlib.pyplot as plt
import torch

SMALL = os.environ.get("NUMDIFF_NOTEBOOK_SMALL") == "1"  # CI runs this notebook with tiny sizes
N = 20 if SMALL else 200
STEPS = 5 if SMALL else 150
numdiff.set_num_threads(1)
torch.set_num_threads(1)
rng = np.random.default_rng(0)
x_train = np.sort(rng.uniform(-3, 3, (N, 1)), axis=0)
y_train = np.sin(2 * x_train) + 0.3 * x_train + 0.1 * rng.standard_normal((N, 1))
x_test = np.linspace(-3.5, 3.5, 200)[:, None]
print(f"{N} training points, {STEPS} Adam steps; load average {os.getloadavg()[0]:.1f}")

# %% [markdown]
# ## The model, written once for both libraries
#
# `lib` is numdiff or torch: the code uses only names the two share (`lib.linalg.cholesky`,
# `lib.cholesky_solve`, `diagonal`, `exp`), so it runs unchanged with either.

# %%
def make_gp(lib):
    params = {name: lib.tensor(value, dtype=lib.float64, requires_grad=True)
              for name, value in (("log_length", 0.0), ("log_signal", 0.0), ("log_noise", -1.0))}

    def kernel(a, b):
        distance = (a - b.mT) ** 2
        return params["log_signal"].exp() * (-0.5 * distance / params["log_length"].exp() ** 2).exp()

    def negative_log_likelihood(x, y):
        n = x.shape[0]
        k = kernel(x, x) + params["log_noise"].exp() * lib.eye(n, dtype=lib.float64)
        low = lib.linalg.cholesky(k)
        alpha = lib.cholesky_solve(y, low)
        return 0.5 * (y * alpha).sum() + low.diagonal().log().sum() + 0.5 * n * np.log(2 * np.pi)

    def predict(x, y, x_new):
        n = x.shape[0]
        k = kernel(x, x) + params["log_noise"].exp() * lib.eye(n, dtype=lib.float64)
        low = lib.linalg.cholesky(k)
        k_star = kernel(x_new, x)
        mean = k_star @ lib.cholesky_solve(y, low)
        v = lib.linalg.solve_triangular(low, k_star.mT, upper=False)
        variance = params["log_signal"].exp() - (v * v).sum(0)
        return mean.squeeze(-1), variance

    return params, negative_log_likelihood, predict


def fit(lib, objective, params, x, y):
    optimizer = lib.optim.Adam(list(params.values()), lr=0.05)
    losses = []
    start = time.perf_counter()
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = objective(x, y)
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses, (time.perf_counter() - start) / STEPS


# %% [markdown]
# ## Fitting: eager numdiff, compiled numdiff, PyTorch

# %%
results = {}
for name in ("numdiff eager", "numdiff.compile", "torch"):
    lib = torch if name == "torch" else numdiff
    params, objective, predict = make_gp(lib)
    if name == "numdiff.compile":
        objective = numdiff.compile(objective)
    x, y = lib.tensor(x_train), lib.tensor(y_train)
    losses, seconds = fit(lib, objective, params, x, y)
    with (torch.no_grad() if lib is torch else numdiff.no_grad()):
        mean, variance = predict(x, y, lib.tensor(x_test))
    results[name] = dict(losses=losses, seconds=seconds, mean=mean.numpy(), std=np.sqrt(variance.numpy().clip(0)),
                         params={k: float(v) for k, v in params.items()})
    if name == "numdiff.compile":
        print("compiled, graph breaks:", objective.compiled.eager_reason or "none")
for name, r in results.items():
    print(f"{name:16s} final -log p(y) {r['losses'][-1]:9.4f} | {1e3 * r['seconds']:7.2f} ms a step | "
          + ", ".join(f"{k} {v:+.4f}" for k, v in r["params"].items()))
print("largest difference in the fitted mean, numdiff vs torch:",
      f"{np.abs(results['numdiff eager']['mean'] - results['torch']['mean']).max():.2e}")

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
for name, r in results.items():
    left.plot(r["losses"], label=name)
left.set(xlabel="Adam step", ylabel="-log p(y)", title="the marginal likelihood, maximised")
left.legend()
r = results["numdiff.compile"]
right.scatter(x_train[:, 0], y_train[:, 0], s=8, color="black", label="training data")
right.plot(x_test[:, 0], r["mean"], label="posterior mean")
right.fill_between(x_test[:, 0], r["mean"] - 2 * r["std"], r["mean"] + 2 * r["std"], alpha=0.3, label="2 std")
right.set(title="the fitted GP (numdiff.compile)")
right.legend()
plt.tight_layout()

# %% [markdown]
# ## Reading the results
#
# The three fits follow the same path: the losses agree step by step and the fitted means to
# round-off, since both libraries run the same LAPACK factorization and the same published
# gradient formulas. The compiled objective is one graph (no graph break: cholesky,
# cholesky_solve and solve_triangular are recorded ops), and its step is cheaper than eager
# numdiff's, which pays Python per op. Against PyTorch the cost per step is dominated, at this
# size, by the n x n Cholesky and its two triangular solves: read the times printed above for
# this machine, on which other jobs run too.
