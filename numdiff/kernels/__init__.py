"""CPU kernels of numdiff: plain functions over NumPy arrays, compiled with Numba.

Kernels never see a Tensor. Each takes arrays and sizes, writes into a caller-provided output
array and documents its loop nest, shapes, extra memory and what runs in parallel:

* :mod:`numdiff.kernels.matmul` -- GEMM and batched GEMM, forward and backward.
* :mod:`numdiff.kernels.conv` -- conv2d forward, backward_input, backward_weight (conv1d runs
  them with H = 1, transposed convolution with roles swapped).
* :mod:`numdiff.kernels.pool` -- max and adaptive-max pooling and their backward (scatter,
  gather); re-exports :mod:`numdiff.kernels.avg_pool` (average and adaptive-average pooling).

(``elementwise`` and ``optim`` in this package belong to the ops and optimizer layers;
:func:`compile_all` warms them up too.)

Every public kernel checks its arguments in Python first (dtypes, layout, shapes, an output that
overlaps an input, and the integer arguments through one parser with one bound,
``numdiff._ground.args``); the pooling window arithmetic is written once
(``numdiff._ground.pool_geometry``) and compiled for the CPU here and for CUDA in
``numdiff.cuda.kernels``.

Compilation is lazy, once per dtype, and cached on disk (``cache=True``). :func:`compile_all`
compiles (or loads from the cache) every kernel up front and records how long each took.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import numpy as np

from numdiff._lazy import lazy_module

__all__ = ["avg_pool", "compile_all", "compile_times", "conv", "matmul", "pool"]

# The kernel modules import Numba and run when first used, not at `import numdiff` (issue 26).
_background = lazy_module("numdiff.kernels._background")
avg_pool = lazy_module("numdiff.kernels.avg_pool")
conv = lazy_module("numdiff.kernels.conv")
matmul = lazy_module("numdiff.kernels.matmul")
pool = lazy_module("numdiff.kernels.pool")
reduce_sum = lazy_module("numdiff.kernels.reduce_sum")
_parallel = lazy_module("numdiff.kernels._parallel")


def __dir__() -> list[str]:
    return sorted(__all__)

compile_times: dict[str, float] = {}
"""Seconds the first call of each kernel took in :func:`compile_all` (compiling it, or loading it
from the disk cache), keyed ``"module.kernel[dtype]"`` like ``"_conv_cores.forward_core[float32]"``."""


def _own_warmups(dtype: np.dtype) -> list[tuple[str, Callable[[], object]]]:
    """One tiny call per compiled kernel of matmul/conv/pool, named by the dispatcher it compiles
    (a call also compiles the helpers that dispatcher inlines or calls). Cores built serial and
    parallel (:mod:`numdiff.kernels._parallel`) are called twice: ``"<core>"`` runs the parallel
    build, ``"<core>[serial]"`` the serial one."""
    calls = []
    for name, call in _one_call_per_core(dtype):
        if name.startswith("matmul."):  # one build each: the serial loop and the parallel driver
            calls.append((name, call))
            continue
        calls.append((f"{name}[serial]", lambda call=call: _serial_build(call)))
        calls.append((name, lambda call=call: _parallel_build(call)))
    return calls


def _serial_build(call: Callable[[], object]) -> object:
    with _parallel.always_serial():
        return call()


def _parallel_build(call: Callable[[], object]) -> object:
    with _parallel.always_parallel():
        return call()


def _one_call_per_core(dtype: np.dtype) -> list[tuple[str, Callable[[], object]]]:

    def z(*shape: int) -> np.ndarray:
        return np.zeros(shape, dtype)

    def idx(width: int = 1) -> np.ndarray:
        return np.zeros((1, 1, 1, width), np.int64)

    return [
        ("matmul.gemm_batch", lambda: matmul.gemm_nn(z(2, 2), z(2, 2), z(2, 2))),  # small: calling thread
        ("matmul._bgemm", lambda: matmul._bgemm(False, False, z(1, 2, 2), z(1, 2, 2), z(1, 2, 2), 1)),
        # Outputs of more than BATCHED_MAX_POSITIONS positions an image (BATCHED_GRADIENT_MAX_POSITIONS
        # for the input gradient) run im2col image by image. Two rows: a one-row convolution (conv1d)
        # takes numdiff.kernels._conv_rows where the products run as loops.
        (
            "_conv_cores.forward_core",
            lambda: conv.conv2d_forward(z(1, 1, 2, 258), z(1, 1, 1, 2), z(1), z(1, 1, 2, 257)),
        ),
        (
            "_conv_cores.backward_input_core",
            lambda: conv.conv2d_backward_input(z(1, 1, 1, 33), z(1, 1, 1, 2), z(1, 1, 1, 34)),
        ),
        (
            "_conv_cores.backward_weight_core",  # stride 3: not the flat dot products' route
            lambda: conv.conv2d_backward_weight(z(1, 1, 2, 772), z(1, 1, 2, 257), z(1, 1, 1, 2), stride=(1, 3)),
        ),
        # Stride-1 weight gradients to few channels over planes of 256+ positions (_conv_routing_flat.use_flat_weight).
        (
            "_conv_flat_weight.flat_backward_weight_core",
            lambda: conv.conv2d_backward_weight(z(1, 1, 2, 257), z(1, 1, 2, 256), z(1, 1, 1, 2)),
        ),
        # Small outputs run several images a GEMM (_conv_routing.batched_images).
        (
            "_conv_batched.batched_forward_core",
            lambda: conv.conv2d_forward(z(1, 1, 3, 3), z(1, 1, 2, 2), z(1), z(1, 1, 2, 2)),
        ),
        (
            "_conv_batched.batched_backward_input_core",
            lambda: conv.conv2d_backward_input(z(1, 1, 2, 2), z(1, 1, 2, 2), z(1, 1, 3, 3)),
        ),
        (
            "_conv_batched.batched_backward_weight_core",
            lambda: conv.conv2d_backward_weight(z(1, 1, 3, 3), z(1, 1, 2, 2), z(1, 1, 2, 2)),
        ),
        # 3x3 stride-1 convolutions with enough channels and width run as Winograd (_conv_routing's rule).
        (
            "_winograd.winograd_forward_core",
            lambda: conv.conv2d_forward(z(1, 20, 1, 20), z(20, 20, 3, 3), z(20), z(1, 20, 1, 20), padding=(1, 1, 1, 1)),
        ),
        (
            "_winograd.winograd_backward_input_core",
            lambda: conv.conv2d_backward_input(z(1, 20, 1, 20), z(20, 20, 3, 3), z(1, 20, 1, 20), padding=(1, 1, 1, 1)),
        ),
        (
            "_winograd.winograd_backward_weight_core",
            lambda: conv.conv2d_backward_weight(z(1, 20, 1, 20), z(1, 20, 1, 20), z(20, 20, 3, 3), padding=(1, 1, 1, 1)),
        ),
        # Narrow 3x3 stride-1 convolutions with work, positions and channels enough run direct.
        (
            "_conv_direct_forward.direct_forward_core",
            lambda: conv.conv2d_forward(z(128, 32, 1, 8), z(32, 32, 3, 3), z(32), z(128, 32, 1, 8), padding=(1, 1, 1, 1)),
        ),
        (
            "_conv_direct_forward.direct_backward_input_core",
            lambda: conv.conv2d_backward_input(z(128, 32, 1, 8), z(32, 32, 3, 3), z(128, 32, 1, 8), padding=(1, 1, 1, 1)),
        ),
        # No weight gradient routes direct (_conv_routing.DIRECT_MAX_WIDTH["backward_weight"] is 0): that
        # shape runs im2col, warmed above, so no entry would reach _conv_direct.direct_backward_weight_core.
        # groups > 1 with few channels a group (depthwise) run as the per-group stencil.
        (
            "_conv_grouped.grouped_forward_core",
            lambda: conv.conv2d_forward(z(1, 2, 3, 3), z(2, 1, 2, 2), z(2), z(1, 2, 2, 2), groups=2),
        ),
        (
            "_conv_depthwise.depthwise_forward_core",  # depthwise, at least 8 channels, rows of at most 8
            lambda: conv.conv2d_forward(z(1, 8, 3, 3), z(8, 1, 2, 2), z(8), z(1, 8, 2, 2), groups=8),
        ),
        (
            "_conv_depthwise.depthwise_backward_input_core",
            lambda: conv.conv2d_backward_input(z(1, 8, 2, 2), z(8, 1, 2, 2), z(1, 8, 3, 3), groups=8),
        ),
        (
            "_conv_depthwise.depthwise_backward_weight_core",
            lambda: conv.conv2d_backward_weight(z(1, 8, 3, 3), z(1, 8, 2, 2), z(8, 1, 2, 2), groups=8),
        ),
        (
            "_conv_grouped.grouped_backward_input_core",
            lambda: conv.conv2d_backward_input(z(1, 2, 2, 2), z(2, 1, 2, 2), z(1, 2, 3, 3), groups=2),
        ),
        (
            "_conv_grouped.grouped_backward_weight_core",
            lambda: conv.conv2d_backward_weight(z(1, 2, 3, 3), z(1, 2, 2, 2), z(2, 1, 2, 2), groups=2),
        ),
        # Stride-1 forwards to at most NARROW_MAX_CHANNELS output channels run the narrow loop.
        (
            "_conv_narrow.narrow_forward_core",
            lambda: conv.conv2d_forward(z(1, 1, 3, 10), z(1, 1, 3, 3), z(1), z(1, 1, 1, 8)),
        ),
        (
            "_max_pool_cores.max_pool_core",  # the row sweep, for planes at least DIRECT_MAX_POOL_WIDTH wide
            lambda: pool.max_pool2d_forward(z(1, 1, 1, 32), z(1, 1, 1, 16), idx(16), (1, 2), (1, 2)),
        ),
        (
            "_max_pool_cores.max_pool_inside_core",  # narrow planes, every window inside the image
            lambda: pool.max_pool2d_forward(z(1, 1, 1, 2), z(1, 1, 1, 1), idx(), (1, 2), (1, 2)),
        ),
        (
            "_max_pool_cores.max_pool_2x2_core",  # MaxPool2d(2) with every window inside the plane
            lambda: pool.max_pool2d_forward(z(1, 1, 2, 2), z(1, 1, 1, 1), idx(), (2, 2), (2, 2)),
        ),
        (
            "_max_pool_cores.max_pool_direct_core",  # narrow planes, windows reaching into padding
            lambda: pool.max_pool2d_forward(z(1, 1, 1, 2), z(1, 1, 1, 2), idx(2), (1, 2), (1, 2), (0, 1)),
        ),
        (
            "_max_pool_cores.adaptive_max_core",
            lambda: pool.adaptive_max_pool2d_forward(z(1, 1, 2, 2), z(1, 1, 1, 1), idx()),
        ),
        ("_max_pool_cores.scatter_core", lambda: pool.max_pool_backward(z(1, 1, 1, 1), idx(), z(1, 1, 2, 2))),
        ("_max_pool_cores.gather_core", lambda: pool.max_pool_gather(z(1, 1, 2, 2), idx(), z(1, 1, 1, 1))),
        (
            "avg_pool._avg_pool_forward_core",
            lambda: pool.avg_pool2d_forward(z(1, 1, 2, 2), z(1, 1, 1, 1), (2, 2), (2, 2)),
        ),
        (
            "avg_pool._avg_pool_backward_core",
            lambda: pool.avg_pool2d_backward(z(1, 1, 1, 1), z(1, 1, 2, 2), (2, 2), (2, 2)),
        ),
        (
            "avg_pool._adaptive_avg_forward_core",
            lambda: pool.adaptive_avg_pool2d_forward(z(1, 1, 2, 2), z(1, 1, 1, 1)),
        ),
        (
            "avg_pool._adaptive_avg_backward_core",
            lambda: pool.adaptive_avg_pool2d_backward(z(1, 1, 1, 1), z(1, 1, 2, 2)),
        ),
    ]


def _other_warmups(dtype: np.dtype) -> list[tuple[str, Callable[[], object]]]:
    """The other kernel modules of this package (elementwise, optimizer steps), through their
    public functions: the optimizer steps run a serial build below a size and a parallel one
    above it, so each is called at both sizes."""
    calls: list[tuple[str, Callable[[], object]]] = []
    try:
        from numdiff.kernels import elementwise
    except ImportError:
        elementwise = None
    if elementwise is not None:
        # The generated loops of the rules a training step runs: contiguous forward, full backward.
        for name in elementwise.WARMUP_RULES:
            calls.append((f"elementwise.{name}[forward]", lambda name=name: elementwise.warm(name, dtype)))
    try:
        from numdiff.kernels import optim, optim_steps
    except ImportError:
        return calls
    large = int(getattr(optim, "PARALLEL_MIN_ELEMENTS", 1))
    for size in sorted({1, large}):
        build = "serial" if size < large else "parallel"

        def vec(size: int = size) -> np.ndarray:
            return np.zeros(size, dtype)

        calls += [
            (
                f"optim.sgd[{build}]",
                lambda vec=vec: optim_steps.sgd_step(
                    vec(), vec(), vec(), lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0,
                    nesterov=False, maximize=False, first_step=True,
                ),
            ),
            (
                f"optim.adam[{build}]",
                lambda vec=vec: optim_steps.adam_step(
                    vec(), vec(), vec(), vec(), vec(), step=1, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8,
                    weight_decay=0.0, decoupled_weight_decay=False, amsgrad=True, maximize=False,
                ),
            ),
            (
                f"optim.rmsprop[{build}]",
                lambda vec=vec: optim_steps.rmsprop_step(
                    vec(), vec(), vec(), vec(), vec(), lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0.0,
                    momentum=0.9, centered=True, maximize=False,
                ),
            ),
            (
                f"optim.adagrad[{build}]",
                lambda vec=vec: optim_steps.adagrad_step(
                    vec(), vec(), vec(), step=1, lr=0.1, lr_decay=0.0, eps=1e-10, weight_decay=0.0,
                    maximize=False,
                ),
            ),
        ]  # fmt: skip
    calls += _foreach_warmups(dtype)
    # A broadcast's gradient: summed axes interleaved with kept ones.
    calls.append(("reduce_sum._SUM_PAIRS", lambda: reduce_sum.sum_dims(np.zeros((2, 2, 2), dtype), (0, 2), np.zeros((1, 2, 1), dtype))))
    # The transposing copy's parallel build (layout_copy runs it only at two or more threads).
    from numdiff.kernels import _layout_copy_rows

    flat = np.zeros(4, dtype)
    flat.flags.writeable = False  # as layout_copy passes its source
    calls.append(("_layout_copy_rows.copy_rows",
                  lambda: _layout_copy_rows.copy_rows(flat, (1, 1, 2, 2), (0, 0, 1, 2), np.zeros(4, dtype), 2)))
    return calls


def _foreach_warmups(dtype: np.dtype) -> list[tuple[str, Callable[[], object]]]:
    """One tiny group update per optimizer through numdiff.kernels.optim_foreach."""
    from numdiff.kernels.optim_foreach import ForeachUpdate

    def run(name: str, arity: int, hyper: tuple, flags: tuple) -> None:
        update = ForeachUpdate(name, flags)
        update.add(tuple(np.zeros(1, dtype) for _ in range(arity)), hyper)
        update.run()

    return [
        ("optim_foreach.sgd_foreach", lambda: run("sgd", 3, (0.1, 0.9, 0.0, 0.0, 1.0), (False, False))),
        (
            "optim_foreach.adam_foreach",
            lambda: run("adam", 5, (0.1, 0.9, 0.999, 1e-8, 0.0, 1.0, 0.1), (False, True, False)),
        ),
        ("optim_foreach.rmsprop_foreach", lambda: run("rmsprop", 5, (0.1, 0.9, 1e-8, 0.0, 0.9), (True, False))),
        ("optim_foreach.adagrad_foreach", lambda: run("adagrad", 3, (0.1, 1e-10, 0.0), (False,))),
    ]


def compile_all(
    dtypes: Iterable[np.dtype | type | str] = (np.float32, np.float64), progress: bool = False
) -> dict[str, float]:
    """Compile (or load from Numba's on-disk cache) every kernel in this package for each dtype.

    Returns the seconds each kernel's first call took, summed over the dtypes and keyed by the
    dispatcher it compiles (``"_conv_cores.forward_core"``; what :func:`numdiff.warmup` reports);
    :data:`compile_times` keeps the per-dtype figures. With ``progress=True`` a tqdm bar is shown
    when tqdm is installed.

    >>> times = compile_all(["float64"])
    >>> all(t >= 0 for t in times.values()) and "_conv_cores.forward_core" in times
    True
    """
    resolved = [np.dtype(d) for d in dtypes]
    for d in resolved:
        if d not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"compile_all: dtypes must be float32 or float64, got {d}")
    jobs = [(name, d, call) for d in resolved for name, call in _own_warmups(d) + _other_warmups(d)]
    bar = None
    if progress:
        try:
            from tqdm import tqdm
        except ImportError:
            bar = None
        else:
            bar = tqdm(total=len(jobs), desc="numdiff kernels", unit="kernel")
    totals: dict[str, float] = {}
    for name, d, call in jobs:
        if bar is not None:
            bar.set_postfix_str(f"{name}[{d.name}]")
        start = time.perf_counter()
        with _background.foreground():  # every build compiled (or loaded) here, none left to the helper
            call()
        seconds = time.perf_counter() - start
        compile_times[f"{name}[{d.name}]"] = seconds
        totals[name] = totals.get(name, 0.0) + seconds
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return totals
