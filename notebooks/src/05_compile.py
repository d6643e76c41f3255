# %% [markdown]
# # `numdiff.compile`: the whole graph as generated code
#
# Eager numdiff runs every op through Python: a Tensor, a node on the tape, a kernel call. On
# small models that cost decides the speed. `numdiff.compile` runs a function (or a Module) once
# while recording every op call, traces the backward from each op's own backward, and generates
# one forward and one backward function: runs of elementwise ops become one Numba loop, and
# everything else calls the op's array-level kernel with no Tensor or tape in between. On the
# tape the whole call is one node.
#
# This notebook shows the generated source and the traced graph, then times eager numdiff,
# compiled numdiff and PyTorch eager (one thread each, alternating rounds, medians) on a
# 100-op elementwise chain and the digits CNN train step, and the first call's trace-and-compile
# time. The timings come from a shared machine: read the ratios, not the milliseconds.

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

import numba
import torch

SMALL = os.environ.get("NUMDIFF_NOTEBOOK_SMALL") == "1"  # CI runs this notebook with tiny sizes
REPEAT = 3 if SMALL else 9
numba.set_num_threads(1)
torch.set_num_threads(1)
print("numdiff", numdiff.__version__, "| torch", torch.__version__, "| load average", os.getloadavg()[0])

# %% [markdown]
# ## A compiled function, its graph and its source

# %%
def chain(sin, exp, x, steps=25):
    """100 elementwise ops: sin, mul, exp, add, repeated."""
    for _ in range(steps):
        x = exp(sin(x) * 0.9) + 0.1
    return x


f = numdiff.compile(lambda x: chain(numdiff.sin, numdiff.exp, x, steps=2).sum())
x = numdiff.randn(16, requires_grad=True)
f(x).backward()
print("gradient matches eager:", np.allclose(
    x.grad.numpy(), numdiff.autograd.grad(chain(numdiff.sin, numdiff.exp, x, steps=2).sum(), x)[0].numpy(), rtol=1e-5))
numdiff.viz.draw_graph(f)

# %%
print(f.compiled.sources[0])

# %% [markdown]
# The forward is one `@njit` loop that also accumulates the sum; values the backward needs are
# rows of one buffer, and the backward is one loop reading that buffer.
#
# ## The 100-op chain on float32[16], forward and backward

# %%
data = np.random.default_rng(0).standard_normal(16).astype(np.float32)
compiled_chain = numdiff.compile(lambda x: chain(numdiff.sin, numdiff.exp, x).sum())
xn = numdiff.tensor(data, requires_grad=True)
xt = torch.tensor(data, requires_grad=True)


def reset_and(step):
    def run():
        xn.grad = None
        xt.grad = None
        step()
    return run


table = numdiff.benchmark.compare({
    "numdiff compiled": reset_and(lambda: compiled_chain(xn).backward()),
    "numdiff eager": reset_and(lambda: chain(numdiff.sin, numdiff.exp, xn).sum().backward()),
    "torch eager": reset_and(lambda: chain(torch.sin, torch.exp, xt).sum().backward()),
}, repeat=REPEAT, baseline="torch eager")
for name, timing in table.timings.items():
    print(f"{name:17s} {timing.median * 1e3:8.3f} ms   ratio to torch eager {table.ratio(name):.3f}")

# %% [markdown]
# ## The digits CNN train step (batch 32, 1x8x8, Adam)
#
# The model and its loss are compiled as one function; Adam runs eagerly after the backward.

# %%
def digits_model(nn):
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10),
    )


rng = np.random.default_rng(0)
images, labels = rng.standard_normal((32, 1, 8, 8)).astype(np.float32), rng.integers(0, 10, 32)


def numdiff_step(compiled):
    net = digits_model(numdiff.nn)
    optimizer = numdiff.optim.Adam(net.parameters(), lr=1e-3)
    xb, yb = numdiff.tensor(images), numdiff.tensor(labels)

    def loss_of(inputs, targets):
        return numdiff.nn.functional.cross_entropy(net(inputs), targets)

    loss_fn = numdiff.compile(loss_of) if compiled else loss_of

    def step():
        optimizer.zero_grad()
        loss_fn(xb, yb).backward()
        optimizer.step()

    return step


def torch_step():
    net = digits_model(torch.nn)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    xb, yb = torch.tensor(images), torch.tensor(labels)

    def step():
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(net(xb), yb).backward()
        optimizer.step()

    return step


first = numdiff_step(True)
start = time.perf_counter()
first()
print(f"first compiled step (trace + generate + load kernels): {time.perf_counter() - start:.2f} s")
table = numdiff.benchmark.compare(
    {"numdiff compiled": first, "numdiff eager": numdiff_step(False), "torch eager": torch_step()},
    repeat=REPEAT, baseline="torch eager",
)
for name, timing in table.timings.items():
    print(f"{name:17s} {timing.median * 1e3:8.3f} ms   ratio to torch eager {table.ratio(name):.3f}")

# %% [markdown]
# ## What the numbers show
#
# - On small tensors compiling removes nearly all of the per-op cost: the 100-op chain runs as
#   two loops, an order of magnitude faster than eager numdiff and PyTorch eager.
# - The digits step is bound by its kernels (convolution, pooling, GEMM); compiling removes the
#   tape and most per-op Python, but PyTorch's oneDNN kernels stay faster here.
# - See `benchmarks/bench_compile.py` and `benchmarks/RESULTS.md` for all four workloads and the
#   cold- and warm-cache first calls.
