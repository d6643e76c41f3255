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
# so a noisy neighbour slows them all alike; we report the median per call.
#
# **One thread per library.** This machine has 2 cores, shared with other jobs. Numba's parallel
# kernels and PyTorch each bring their own OpenMP runtime, and an OpenMP runtime keeps its idle
# threads spinning for a while after each parallel loop, ready for the next one. With two
# runtimes in one process and more threads than free cores, one library's spinning threads take
# the cores the other needs, and interleaved timings measure that fight: here a tiny max_pool2d
# went from 0.03 ms to 0.5 ms, and NumPy, which was not even running in parallel, slowed down
# too. Making idle threads sleep instead (`OMP_WAIT_POLICY=PASSIVE`) made PyTorch's small conv
# backward ten times slower. So every library runs on one thread, set before any of them is
# imported, and the peak is one core's. On a machine with cores to spare, raise the count below.

# %%
import os

# Read once, when each library starts its thread pool: so before importing any of them.
os.environ.update(dict.fromkeys(["NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"], "1"))

import json
import subprocess
import sys
import tempfile
import textwrap
import time

import matplotlib.pyplot as plt
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

try:
    import numdiff
except ImportError:  # running from a clone without `pip install -e .`
    sys.path.insert(0, os.path.abspath(".."))
    import numdiff

import numba

from numdiff import benchmark

F = numdiff.nn.functional  # PyTorch's usual alias
THREADS = int(os.environ["NUMBA_NUM_THREADS"])

SMALL = os.environ.get("NUMDIFF_NOTEBOOK_SMALL") == "1"  # CI runs this notebook with tiny sizes
REPEAT = 3 if SMALL else 7

try:
    import torch

    torch.set_num_threads(THREADS)
    HAVE_TORCH = True
    print(f"PyTorch {torch.__version__} found: compared below")
except ImportError:
    HAVE_TORCH = False
    print("PyTorch is not installed: numdiff is compared with NumPy only")

PEAK = benchmark.peak_gflops("float32", cores=THREADS)
print(f"numdiff {numdiff.__version__}, numba {numba.__version__}, threads: {numba.get_num_threads()}")
print("theoretical peak:", PEAK)
load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
print(f"load average when this ran: {load:.1f} on {os.cpu_count()} CPUs (it slows every library alike)")

# %% [markdown]
# The peak is `cores x FMA units x SIMD lanes x 2 x clock`: every core retiring two fused
# multiply-adds on full-width vectors every cycle. Real code reaches a fraction of it; large
# matrix products come closest because they reuse each loaded number many times. The assumptions
# printed above matter (for example AMD Zen 4 executes a 512-bit FMA as two 256-bit halves, which
# halves its real AVX-512 peak), so read the peak line as a ceiling, not a target.
#
# ## 1. Compile time against run time
#
# `numdiff.warmup()` makes one tiny call per kernel and dtype, so that every kernel is compiled
# (or loaded from Numba's disk cache, if an earlier process compiled it) up front instead of
# during the first training step. It returns `numdiff.jit.compiled_kernels()`: each Numba kernel,
# the signatures it holds, whether each came from the compiler or the disk cache, and the seconds
# each first call took.

# %%
start = time.perf_counter()
table = numdiff.warmup(("float32",), progress=False)
print(f"numdiff.warmup(('float32',)) took {time.perf_counter() - start:.2f} s")
signatures = [s for kernel in table for s in kernel.signatures]
compiled = [s for s in signatures if s.source == "compiled"]
print(
    f"{len(table)} Numba kernels hold {len(signatures)} signatures: {len(compiled)} compiled in this "
    f"process ({table.total_compile_seconds:.1f} s of Numba compile time), "
    f"{len(signatures) - len(compiled)} loaded from the disk cache"
)
calls = sorted(table.warmup_calls.items(), key=lambda item: item[1])
fig, ax = plt.subplots(figsize=(7, 0.22 * len(calls) + 0.8))
ax.barh([name.removesuffix("[float32]") for name, _ in calls], [seconds for _, seconds in calls])
ax.set(xscale="log", xlabel="seconds (log scale)", title="warmup: each kernel's first call, this process")
ax.tick_params(axis="y", labelsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# (Kernels counted without a signature are helpers, compiled into the kernels that call them.)
# Those seconds depend on whether this machine's cache was already warm. To see both cases, the
# next cell runs a **new Python process twice** with an empty `NUMBA_CACHE_DIR`: the first
# compiles every kernel it meets and writes the cache, the second only loads it. Each process
# times `import numdiff`, then for each op the **first** forward + backward call (which compiles or
# loads its kernels) and a **later** one (the median of five: pure run time). No warmup in these
# processes: this is what the first training step of a script pays.

# %%
PROBE = textwrap.dedent(
    """
    import json, sys, time
    start = time.perf_counter()
    import numdiff
    import numdiff.nn.functional as F
    times = {"import numdiff": time.perf_counter() - start}
    ops = json.loads(sys.argv[1])

    a = numdiff.randn(128, 128, requires_grad=True)
    x = numdiff.randn(4, 8, 16, 16, requires_grad=True)
    w = numdiff.randn(8, 8, 3, 3, requires_grad=True)
    steps = {
        "matmul": lambda: (a @ a).sum().backward(),
        "conv2d": lambda: F.conv2d(x, w, padding=1).sum().backward(),
        "max_pool2d": lambda: F.max_pool2d(x, 2).sum().backward(),
    }
    for name in ops:
        began = time.perf_counter()
        steps[name]()
        first = time.perf_counter() - began
        later = []
        for _ in range(5):
            began = time.perf_counter()
            steps[name]()
            later.append(time.perf_counter() - began)
        times[name] = {"first": first, "later": sorted(later)[2]}
    print(json.dumps(times))
    """
)
# CI runs this notebook at small sizes: there the cold process compiles one op's kernels only.
PROBE_OPS = ["matmul"] if SMALL else ["matmul", "conv2d", "max_pool2d"]


def probe(cache_dir: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(".."), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-c", PROBE, json.dumps(PROBE_OPS)]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"the probe process failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


with tempfile.TemporaryDirectory() as cache_dir:
    cold = probe(cache_dir)  # empty cache: compiles, then writes the cache
    warm = probe(cache_dir)  # same cache: loads machine code from disk

fig, ax = plt.subplots(figsize=(8, 0.9 * len(PROBE_OPS) + 1.6))
y = np.arange(len(PROBE_OPS))
bars = [
    ("first call, empty cache (compiles)", [cold[op]["first"] for op in PROBE_OPS]),
    ("first call, warm cache (loads)", [warm[op]["first"] for op in PROBE_OPS]),
    ("a later call (runs)", [warm[op]["later"] for op in PROBE_OPS]),
]
for offset, (label, seconds) in zip((-0.27, 0.0, 0.27), bars):
    ax.barh(y + offset, seconds, 0.26, label=label)
ax.set_yticks(y, [f"{op}\nfwd + bwd" for op in PROBE_OPS])
ax.invert_yaxis()
ax.set(xscale="log", xlabel="seconds (log scale)", title="A new process: compiling, loading, running")
ax.legend(fontsize=8, loc="lower right")
plt.tight_layout()
plt.show()

print(
    f"import numdiff: {cold['import numdiff']:.2f} s with an empty cache, {warm['import numdiff']:.2f} s warm"
)
for op in PROBE_OPS:
    run = warm[op]["later"]
    compile_cost = cold[op]["first"] - run
    load_cost = warm[op]["first"] - run
    print(
        f"{op:>10}: compiling costs {compile_cost:6.2f} s = {compile_cost / run:8.0f} later calls; "
        f"loading from the cache {load_cost:6.3f} s = {load_cost / run:5.0f} calls"
    )

# %% [markdown]
# Compiling is paid once per process without the cache, and loading once per process with it:
# either way the first step of a job is the slow one, and every step after runs at full speed.
# Call `numdiff.warmup()` at the start of a job (it shows a progress bar) to pay it up front, and
# keep the cache directory between runs (`__pycache__` next to the kernels, or `NUMBA_CACHE_DIR`)
# so that new processes load instead of compile.

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
# line is a faster implementation of the same work.


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
    ax_r.set(xscale="log", xlabel=xlabel, ylabel=rate_label, title=f"{title}: throughput", ylim=(0, None))
    for ax in (ax_t, ax_r):
        ax.set_xticks(sizes, [str(size) for size in sizes])  # the sizes measured, not powers of ten
        ax.minorticks_off()
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
    an, bn, gn = numdiff.tensor(a), numdiff.tensor(b), numdiff.tensor(g)
    ag, bg = numdiff.tensor(a, requires_grad=True), numdiff.tensor(b, requires_grad=True)

    def numdiff_both():
        (ag @ bg).backward(gn)
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
    xn, wn, gn = numdiff.tensor(x), numdiff.tensor(w), numdiff.tensor(g)
    xg, wg = numdiff.tensor(x, requires_grad=True), numdiff.tensor(w, requires_grad=True)

    def numdiff_both():
        F.conv2d(xg, wg, padding=1).backward(gn)
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
# Pooling does one comparison per input element and no multiply-adds, so GFLOP/s says nothing
# about it. Its throughput is plotted instead as the bytes it must at least move per second: the
# input read and the output written, plus for backward the output gradient read and the input
# gradient written (numdiff and PyTorch also keep the index of each window's maximum for the
# backward pass; those bytes are not counted).


# %%
def pool_candidates(size):
    batch, channels = (2, 4) if SMALL else (16, 32)
    x = rng.standard_normal((batch, channels, size, size)).astype(np.float32)
    g = np.ones((batch, channels, size // 2, size // 2), np.float32)
    xn, gn = numdiff.tensor(x), numdiff.tensor(g)
    xg = numdiff.tensor(x, requires_grad=True)

    def numdiff_both():
        F.max_pool2d(xg, 2).backward(gn)
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
# ## 4. Where a training step's time goes: `numdiff.profiler`
#
# The sweeps above time one op at a time. In a training step the question is which ops, backward
# nodes and modules take the time. `numdiff.profiler` answers it with torch.profiler's names, so
# the same few lines profile either library: here a small CNN on 8x8 images (the digits model's
# shape), a few steps of Adam, with numdiff's table first and PyTorch's after it.

# %%
def cnn_step(lib, batch=8 if SMALL else 64):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(32 * 2 * 2, 10))
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
    x, y = lib.randn(batch, 1, 8, 8), lib.randint(0, 10, (batch,))

    def step():
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return step


step = cnn_step(numdiff)
for _ in range(3):
    step()  # compile or load the kernels first: the profile is of steady steps
steps = 2 if SMALL else 10
with numdiff.profiler.profile(profile_memory=True) as prof:
    start = time.perf_counter()
    for _ in range(steps):
        with numdiff.profiler.record_function("train step"):
            step()
    wall_ms = (time.perf_counter() - start) * 1e3
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))
accounted = sum(e.self_cpu_time_total for e in prof.events()) / 1e3
print(f"wall time {wall_ms:.1f} ms for {steps} steps; the profile accounts for {accounted:.1f} ms "
      f"({100 * accounted / wall_ms:.1f}%), Numba compilation {prof.compile_time_ms():.1f} ms")

if HAVE_TORCH:
    torch_step = cnn_step(torch)
    for _ in range(3):
        torch_step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as torch_prof:
        for _ in range(steps):
            with torch.profiler.record_function("train step"):
                torch_step()
    print(torch_prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))

# %% [markdown]
# ## 5. Reading the results
#
# In the run stored here (one thread per library; the ratios printed under each plot are this
# run's, and change a little from run to run):
#
# - **matmul**: all three libraries end in a BLAS GEMM; from n = 512 up they run within about 15%
#   of each other, near 95 GFLOP/s. That is under 60% of the stated one-core peak for all three
#   alike, which says more about the peak's assumptions on this virtual machine (two 512-bit FMA
#   units at the listed clock) than about the code. For smaller n, numdiff's fixed cost per call
#   (the Python op, recording the graph, allocating the output) is a large part of a product that
#   takes microseconds: at n = 64, forward + backward is several times slower than three bare
#   NumPy products.
# - **conv2d**: numdiff's im2col + GEMM kernels run 1.5 to 4.5 times as fast as the NumPy
#   `tensordot` reference, and at half to three quarters of PyTorch's speed (oneDNN) from 16
#   channels up, forward and backward alike; the gap narrows as the channel count grows.
# - **max_pool2d**: numdiff's compiled window loop is 2 to 3 times faster than PyTorch's CPU
#   kernel and 6 to 10 times faster than the NumPy reshape; at a few GB/s, none of them is close
#   to what memory could deliver.
# - **a training step**: the profiler's self times add up to the step's wall time, so its table
#   is a complete account: in the CNN step most of the time is in the convolutions, their
#   backward (`conv2d_weight_grad`, `conv_transpose2d`) and the pooling, and the optimizer step
#   is a few percent. PyTorch's table names the same places (`aten::` ops and `...Backward0` nodes).
# - **compile time**: compiling an op's kernels costs as much as ten thousand or more later calls;
#   loading them from the disk cache, a few dozen to a few hundred. Call `numdiff.warmup()` at the
#   start of a job, and keep the cache between runs, so that no training step pays for it.
#
# The exact ratios depend on the machine (cores, SIMD width, memory, other jobs): run the
# notebook to measure yours.
