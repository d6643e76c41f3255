# %% [markdown]
# # Performance: numdiff against PyTorch and NumPy
#
# numdiff's heavy kernels (matmul, conv2d, pooling) are compiled by Numba. This notebook measures
# them against PyTorch (C++/MKL/oneDNN) and plain NumPy on this machine, forward and backward, over
# a sweep of sizes, and reads the GFLOP/s against the machine's theoretical peak. It also looks at
# the price of JIT compilation: how long the first call takes, how many calls pay for it, and what
# Numba's disk cache saves in a new process.
#
# **How the timing works** (`numdiff.benchmark`): each candidate is called once to warm up, then
# timed in rounds of several calls; the candidates are interleaved round by round in one process,
# so a noisy neighbour slows them all alike; we report the median per call. Every library gets the
# same number of threads.

# %%
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display
from numpy.lib.stride_tricks import sliding_window_view

try:
    import numdiff
except ImportError:  # running from a clone without `pip install -e .`
    sys.path.insert(0, os.path.abspath(".."))
    import numdiff

import numba

from numdiff import benchmark

F = numdiff.nn.functional  # PyTorch's usual alias

SMALL = os.environ.get("NUMDIFF_NOTEBOOK_SMALL") == "1"  # CI runs this notebook with tiny sizes
REPEAT = 3 if SMALL else 7
THREADS = numba.get_num_threads()

try:
    import torch

    torch.set_num_threads(THREADS)
    HAVE_TORCH = True
    print(f"PyTorch {torch.__version__} found: compared below, on {THREADS} threads like numdiff")
except ImportError:
    HAVE_TORCH = False
    print("PyTorch is not installed: numdiff is compared with NumPy only")

PEAK = benchmark.peak_gflops("float32")
print(f"numdiff {numdiff.__version__}, numba {numba.__version__}, {THREADS} threads")
print("theoretical peak:", PEAK)

# %% [markdown]
# The peak is `cores x FMA units x SIMD lanes x 2 x clock`: every core retiring two fused
# multiply-adds on full-width vectors every cycle. Real code reaches a fraction of it; large
# matrix products come closest because they reuse each loaded number many times. The assumptions
# printed above matter (for example AMD Zen 4 executes a 512-bit FMA as two 256-bit halves, which
# halves its real AVX-512 peak), so read the peak line as a ceiling, not a target.
#
# ## 1. Compile time against run time
#
# `numdiff.warmup()` compiles every kernel for float32 and float64 up front, or loads it from the
# disk cache if an earlier process compiled it already. `numdiff.jit.compiled_kernels()` then says,
# for each Numba kernel, which signatures exist and whether each came from the compiler or the
# cache.

# %%
start = time.perf_counter()
table = numdiff.warmup(("float32",), progress=not SMALL)
print(f"warmup took {time.perf_counter() - start:.2f} s")
display(table)

# %% [markdown]
# That was in this process, where the cache under `numdiff/kernels/__pycache__` may already be
# warm. To see what compiling costs from nothing, run a new Python process twice with an empty
# `NUMBA_CACHE_DIR`: the first compiles and writes the cache, the second only loads it. Each
# process measures `import numdiff`, `numdiff.warmup()`, and the first and second call of one
# matmul and one conv2d, forward and backward.

# %%
PROBE = textwrap.dedent(
    """
    import json, time
    t0 = time.perf_counter()
    import numdiff
    import numdiff.nn.functional as F
    t1 = time.perf_counter()
    numdiff.warmup(("float32",), progress=False)
    t2 = time.perf_counter()

    def step():
        a = numdiff.randn(64, 64, requires_grad=True)
        x = numdiff.randn(2, 3, 16, 16, requires_grad=True)
        w = numdiff.randn(4, 3, 3, 3, requires_grad=True)
        ((a @ a).sum() + F.conv2d(x, w, padding=1).sum()).backward()

    step(); t3 = time.perf_counter()
    step(); t4 = time.perf_counter()
    print(json.dumps({"import": t1 - t0, "warmup": t2 - t1, "first step": t3 - t2, "second step": t4 - t3}))
    """
)


def probe(cache_dir: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(".."), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


with tempfile.TemporaryDirectory() as cache_dir:
    cold = probe(cache_dir)  # empty cache: compiles, then writes the cache
    warm = probe(cache_dir)  # same cache: loads machine code from disk

phases = list(cold)
fig, ax = plt.subplots(figsize=(7, 3))
y = np.arange(len(phases))
ax.barh(y + 0.2, [cold[p] for p in phases], 0.4, label="cold cache (compiles)")
ax.barh(y - 0.2, [warm[p] for p in phases], 0.4, label="warm cache (loads)")
ax.set_yticks(y, phases)
ax.invert_yaxis()
ax.set_xlabel("seconds")
ax.set_title("A new process: what Numba's disk cache saves")
ax.legend()
plt.show()
for p in phases:
    print(f"{p:>12}: cold {cold[p]:7.3f} s   warm {warm[p]:7.3f} s")
print(f"the disk cache saves {cold['warmup'] - warm['warmup']:.1f} s of compiling per new process")

# %% [markdown]
# After warm-up, the first real step costs about as much as the second: the kernels are ready.
# Compiling is a one-off cost per process (or per machine, with the cache): the number of steady
# calls it equals says when it stops mattering.

# %% [markdown]
# ## 2. NumPy references
#
# NumPy has no conv2d or pooling, so the references below are written with
# `sliding_window_view` and `einsum`/`tensordot`: honest, vectorised NumPy, forward and backward
# (stride 1, the padding that keeps the size). Each one is checked against numdiff before timing.


# %%
def np_conv2d(x, w, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = sliding_window_view(xp, w.shape[2:], axis=(2, 3))  # n c h w kh kw
    return np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)


def np_conv2d_backward(x, w, grad_out, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = sliding_window_view(xp, w.shape[2:], axis=(2, 3))
    grad_w = np.tensordot(grad_out, windows, axes=([0, 2, 3], [0, 2, 3]))
    # The input gradient is a full correlation of grad_out with the flipped, transposed weights.
    k = w.shape[2]
    flipped = w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3)
    grad_x = np_conv2d(grad_out, flipped, k - 1 - pad)
    return grad_x, grad_w


def np_maxpool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def np_maxpool2_backward(x, out, grad_out):
    n, c, h, w = x.shape
    blocks = x.reshape(n, c, h // 2, 2, w // 2, 2)
    mask = blocks == out[:, :, :, None, :, None]
    return (mask * grad_out[:, :, :, None, :, None]).reshape(x.shape)


rng = np.random.default_rng(0)
x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
xt = numdiff.tensor(x, requires_grad=True)
wt = numdiff.tensor(w, requires_grad=True)
out = F.conv2d(xt, wt, padding=1)
g = rng.standard_normal(out.shape).astype(np.float32)
out.backward(numdiff.tensor(g))
gx, gw = np_conv2d_backward(x, w, g, 1)
np.testing.assert_allclose(out.detach().numpy(), np_conv2d(x, w, 1), rtol=1e-4, atol=1e-4)
np.testing.assert_allclose(xt.grad.numpy(), gx, rtol=1e-4, atol=1e-4)
np.testing.assert_allclose(wt.grad.numpy(), gw, rtol=1e-4, atol=1e-4)

pt = numdiff.tensor(x, requires_grad=True)
pooled = F.max_pool2d(pt, 2)
gp = rng.standard_normal(pooled.shape).astype(np.float32)
pooled.backward(numdiff.tensor(gp))
np.testing.assert_allclose(pooled.detach().numpy(), np_maxpool2(x))
np.testing.assert_allclose(pt.grad.numpy(), np_maxpool2_backward(x, np_maxpool2(x), gp))
print("NumPy references agree with numdiff: conv2d forward/backward, max_pool2d forward/backward")

# %% [markdown]
# ## 3. The sweep
#
# For every size, three libraries, forward alone and forward + backward. GFLOP/s counts the
# multiply-adds of the maths (a matmul's backward is two more matmuls of the same size, so
# forward + backward is 3x the forward's FLOPs), the same count for every library, so a higher
# bar is a faster implementation of the same work.


# %%
def sweep(sizes, make_candidates, flops_of):
    """Time every candidate at every size; returns {(name, pass): [(size, median s), ...]}."""
    results = {}
    for size in sizes:
        candidates = make_candidates(size)
        table = benchmark.compare(candidates, repeat=REPEAT, baseline="numdiff fwd")
        for name, timing in table.timings.items():
            results.setdefault(name, []).append((size, timing.median, flops_of(size, name)))
    return results


def plot_sweep(results, title, xlabel, rate_label="GFLOP/s", show_peak=True):
    fig, (ax_t, ax_r) = plt.subplots(1, 2, figsize=(12, 4))
    styles = {"numdiff": "C0", "torch": "C1", "numpy": "C2"}
    for name, points in results.items():
        library, kind = name.split()
        sizes = [p[0] for p in points]
        style = "-o" if kind == "fwd" else "--s"
        ax_t.plot(sizes, [p[1] * 1e3 for p in points], style, color=styles[library], label=name)
        ax_r.plot(sizes, [p[2] / p[1] / 1e9 for p in points], style, color=styles[library], label=name)
    if show_peak:
        ax_r.axhline(PEAK.gflops, color="k", lw=1, ls=":")
        ax_r.text(sizes[0], PEAK.gflops * 0.93, f"peak {PEAK.gflops:.0f} GFLOP/s", va="top")
    ax_t.set(xscale="log", yscale="log", xlabel=xlabel, ylabel="ms per call (median)", title=title)
    ax_r.set(xscale="log", xlabel=xlabel, ylabel=rate_label, title=f"{title}: throughput")
    ax_t.legend(fontsize=8)
    plt.tight_layout()
    plt.show()


def summary(results):
    """Ratio of each library's time to numdiff's, per size (above 1: numdiff is faster)."""
    rows = []
    for name, points in results.items():
        library, kind = name.split()
        if library == "numdiff":
            continue
        ours = dict((s, t) for s, t, _ in results[f"numdiff {kind}"])
        rows.append(f"{name:>12}: " + "  ".join(f"{s}: {t / ours[s]:.2f}x" for s, t, _ in points))
    print("time of the other library / time of numdiff (above 1: numdiff faster)")
    print("\n".join(rows))


# %% [markdown]
# ### Matrix multiply, float32, square n x n


# %%
def matmul_candidates(n):
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    g = np.ones((n, n), np.float32)
    an, bn = numdiff.tensor(a), numdiff.tensor(b)
    ag, bg = numdiff.tensor(a, requires_grad=True), numdiff.tensor(b, requires_grad=True)

    def numdiff_both():
        (ag @ bg).backward(numdiff.tensor(g))
        ag.grad = bg.grad = None

    def numpy_both():
        a @ b
        return g @ b.T, a.T @ g

    candidates = {
        "numdiff fwd": lambda: an @ bn,
        "numdiff fwd+bwd": numdiff_both,
        "numpy fwd": lambda: a @ b,
        "numpy fwd+bwd": numpy_both,
    }
    if HAVE_TORCH:
        at, bt = torch.from_numpy(a), torch.from_numpy(b)
        atg, btg = at.clone().requires_grad_(), bt.clone().requires_grad_()
        gt = torch.from_numpy(g)

        def torch_both():
            (atg @ btg).backward(gt)
            atg.grad = btg.grad = None

        candidates["torch fwd"] = lambda: at @ bt
        candidates["torch fwd+bwd"] = torch_both
    return candidates


matmul_sizes = [32, 64] if SMALL else [64, 128, 256, 512, 1024]
matmul_results = sweep(
    matmul_sizes,
    matmul_candidates,
    lambda n, name: benchmark.matmul_flops(n, n, n) * (1 if name.endswith("fwd") else 3),
)
plot_sweep(matmul_results, "matmul float32", "n (n x n @ n x n)")
summary(matmul_results)

# %% [markdown]
# ### conv2d, float32: batch 16, 3x3 kernel, padding 1, C -> C channels on 32 x 32 images
#
# A conv's backward computes two gradients (input and weight), each as many multiply-adds as the
# forward: forward + backward is 3x the forward's FLOPs.


# %%
def conv_candidates(channels):
    batch, size = (2, 8) if SMALL else (16, 32)
    x = rng.standard_normal((batch, channels, size, size)).astype(np.float32)
    w = (rng.standard_normal((channels, channels, 3, 3)) * 0.1).astype(np.float32)
    g = np.ones((batch, channels, size, size), np.float32)
    xn, wn = numdiff.tensor(x), numdiff.tensor(w)
    xg, wg = numdiff.tensor(x, requires_grad=True), numdiff.tensor(w, requires_grad=True)

    def numdiff_both():
        F.conv2d(xg, wg, padding=1).backward(numdiff.tensor(g))
        xg.grad = wg.grad = None

    def numpy_both():
        np_conv2d(x, w, 1)
        return np_conv2d_backward(x, w, g, 1)

    candidates = {
        "numdiff fwd": lambda: F.conv2d(xn, wn, padding=1),
        "numdiff fwd+bwd": numdiff_both,
        "numpy fwd": lambda: np_conv2d(x, w, 1),
        "numpy fwd+bwd": numpy_both,
    }
    if HAVE_TORCH:
        xt, wt = torch.from_numpy(x), torch.from_numpy(w)
        xtg, wtg = xt.clone().requires_grad_(), wt.clone().requires_grad_()
        gt = torch.from_numpy(g)

        def torch_both():
            torch.nn.functional.conv2d(xtg, wtg, padding=1).backward(gt)
            xtg.grad = wtg.grad = None

        candidates["torch fwd"] = lambda: torch.nn.functional.conv2d(xt, wt, padding=1)
        candidates["torch fwd+bwd"] = torch_both
    return candidates


def conv_flops(channels, name):
    batch, size = (2, 8) if SMALL else (16, 32)
    forward = benchmark.conv2d_flops(batch, channels, channels, size, size, 3, 3)
    return forward * (1 if name.endswith("fwd") else 3)


conv_channels = [4, 8] if SMALL else [8, 16, 32, 64, 128]
conv_results = sweep(conv_channels, conv_candidates, conv_flops)
plot_sweep(conv_results, "conv2d float32", "channels C")
summary(conv_results)

# %% [markdown]
# ### max_pool2d, float32: 2 x 2 window, stride 2, batch 16 x 32 channels, H x W images
#
# Pooling does one comparison per input element: it is limited by memory bandwidth, not
# arithmetic, so its throughput is plotted as GB/s moved (input read + output written, and for
# backward the gradient read and the input gradient written) instead of GFLOP/s against a compute
# peak.


# %%
def pool_candidates(size):
    batch, channels = (2, 4) if SMALL else (16, 32)
    x = rng.standard_normal((batch, channels, size, size)).astype(np.float32)
    g = np.ones((batch, channels, size // 2, size // 2), np.float32)
    xn = numdiff.tensor(x)
    xg = numdiff.tensor(x, requires_grad=True)

    def numdiff_both():
        F.max_pool2d(xg, 2).backward(numdiff.tensor(g))
        xg.grad = None

    def numpy_both():
        out = np_maxpool2(x)
        return np_maxpool2_backward(x, out, g)

    candidates = {
        "numdiff fwd": lambda: F.max_pool2d(xn, 2),
        "numdiff fwd+bwd": numdiff_both,
        "numpy fwd": lambda: np_maxpool2(x),
        "numpy fwd+bwd": numpy_both,
    }
    if HAVE_TORCH:
        xt = torch.from_numpy(x)
        xtg = xt.clone().requires_grad_()
        gt = torch.from_numpy(g)

        def torch_both():
            torch.nn.functional.max_pool2d(xtg, 2).backward(gt)
            xtg.grad = None

        candidates["torch fwd"] = lambda: torch.nn.functional.max_pool2d(xt, 2)
        candidates["torch fwd+bwd"] = torch_both
    return candidates


def pool_bytes(size, name):
    batch, channels = (2, 4) if SMALL else (16, 32)
    forward = batch * channels * (size * size + size * size // 4) * 4
    return forward * (1 if name.endswith("fwd") else 2)


pool_sizes = [8, 16] if SMALL else [16, 32, 64, 128]
pool_results = sweep(pool_sizes, pool_candidates, pool_bytes)
plot_sweep(pool_results, "max_pool2d float32", "H = W", rate_label="GB/s moved", show_peak=False)
summary(pool_results)

# %% [markdown]
# ## 4. Reading the results
#
# - **matmul**: numdiff hands large products to BLAS from inside compiled code, so at large n it
#   runs at the same order of GFLOP/s as NumPy and PyTorch; at small n the fixed cost of a Python
#   call and of recording the graph dominates, and the ratio shows that overhead.
# - **conv2d**: the Numba kernels are compared with PyTorch's hand-tuned C++ (oneDNN) and with a
#   NumPy `tensordot` reference; the GFLOP/s panel shows how far each is from the peak line.
# - **pooling**: memory-bound for everyone; the interesting number is the time ratio.
# - **compile time**: seconds per process without the cache, a fraction of that with it. Call
#   `numdiff.warmup()` at the start of a job (or rely on the cache) so the first training step is
#   not the slow one.
#
# The exact ratios depend on this machine (cores, SIMD width, memory) and are printed above each
# time the notebook runs.
