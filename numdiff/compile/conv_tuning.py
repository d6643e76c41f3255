"""Convolutions autotuned when a program is built: each plan the kernels' routing rules choose
between is run on arrays of the traced shapes, and the fastest is the one the program calls.

Eager mode picks a conv core by thresholds (numdiff.kernels._conv_routing) measured on a few
machines and shapes, and cannot afford to time anything per call. A compiled program calls its
convolutions thousands of times with shapes fixed by its guards, so, as ``torch.compile``'s
max-autotune and cuDNN's benchmark mode do, it times the candidates once
(numdiff.kernels._conv_plans.conv2d_plans) and keeps the fastest. Measured on the small ResNet of
benchmarks/bench_models.py (32x3x32x32, one thread, thread CPU time): the rules' plans take
about 38 ms of convolution a step, the fastest about 29; the 16-channel 32x32 3x3 convolutions
run Winograd instead of direct loops (1.5-1.8x faster each way), the 1x1 stride-2 shortcuts
per-image im2col instead of batched (1.5-2.3x).

What it costs: each convolution of at least TUNE_MIN_MACS multiply-adds runs every candidate
twice on the first call, and the winner and the rules' plan once more (a few ms each; shapes
seen before in this process are not timed again). Only candidates whose machine code is in memory or in Numba's disk cache are timed
(numdiff.kernels._self_healing_cache.CachedDispatcher.ready_for): an alternative never costs a
compile, so on an empty cache the first program runs the rules' plans, and later ones choose
among the cores that some step has compiled. Smaller convolutions keep the rules' plan untimed.
A candidate must also agree with the rules' plan on the timing data (to TOLERANCE of the largest
value) or it is dropped. The choice follows the timings, so two processes may pick different
cores: results then differ in rounding, never more (every candidate computes the same convolution).
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
import time
from typing import Any

import numpy as np

from numdiff._lazy import lazy_module
from numdiff._threads import get_num_threads

_plans = lazy_module("numdiff.kernels._conv_plans")
_blas = lazy_module("numdiff.kernels._blas")
conv = lazy_module("numdiff.kernels.conv")

TUNE_MIN_MACS = 1 << 22
"""Multiply-adds from which a convolution is timed (about 0.3 ms on one core); below, the rules decide."""

KEEP_RULES_MARGIN = 0.95
"""Another plan replaces the rules' one only when it takes at most this share of its time."""

TOLERANCE = {np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-9}
"""Largest difference from the rules' plan's result, relative to its largest value, for a
candidate to count."""


class _Autotune(threading.local):
    enabled = False


_autotune = _Autotune()


@contextlib.contextmanager
def autotuning(enabled: bool) -> Any:
    """Within the block, `conv2d_plan` times candidates (``numdiff.compile(mode="max-autotune")``
    builds its programs in one); outside it, a program runs the rules' plans, as eager does."""
    previous, _autotune.enabled = _autotune.enabled, bool(enabled)
    try:
        yield
    finally:
        _autotune.enabled = previous


def conv2d_plan(kind: str, x_shape: tuple, w_shape: tuple, go_shape: tuple, stride: tuple, padding: tuple,
                dilation: tuple, groups: int, dtype: Any) -> tuple:  # fmt: skip
    """The ``(core, sizes)`` a program runs for the conv2d kernel `kind` of these shapes (those of
    numdiff.kernels.conv.conv2d_plan, whose plan this is below TUNE_MIN_MACS) and `dtype`: the
    fastest of numdiff.kernels._conv_plans.conv2d_plans, timed once per process and thread count,
    inside `autotuning(True)`; the rules' plan outside it."""
    rules_plan = conv.conv2d_plan(kind, x_shape, w_shape, go_shape, stride, padding, dilation, groups)
    if not _autotune.enabled:
        return rules_plan
    macs = x_shape[0] * math.prod(w_shape) * go_shape[2] * go_shape[3]
    if rules_plan[0] is None or macs < TUNE_MIN_MACS or _gathers(kind, rules_plan, w_shape, stride, groups):
        return rules_plan
    shapes = (tuple(x_shape), tuple(w_shape), tuple(go_shape), tuple(stride), tuple(padding), tuple(dilation))
    return _tuned(kind, *shapes, groups, np.dtype(dtype).str, get_num_threads())


@functools.lru_cache(maxsize=512)
def _tuned(kind, x_shape, w_shape, go_shape, stride, padding, dilation, groups, dtype, threads) -> tuple:
    plans = _plans.conv2d_plans(kind, x_shape, w_shape, go_shape, stride, padding, dilation, groups)
    rules_plan = plans[0]
    run = _runner(kind, x_shape, w_shape, go_shape, groups, np.dtype(dtype))
    plans = [rules_plan] + [
        p for p in plans[1:] if not _gathers(kind, p, w_shape, stride, groups) and run.ready(p)
    ]
    if len(plans) < 2:
        return rules_plan
    return plans[fastest(plans, run, time.thread_time if threads == 1 else time.perf_counter)]


def _gathers(kind: str, plan: tuple, w_shape: tuple, stride: tuple, groups: int) -> bool:
    """Whether eager's input gradient would not run this plan's core (it gathers instead)."""
    return kind == "backward_input" and conv.backward_input_gathers(plan[0], w_shape, stride, groups)


def fastest(plans: list, run: Any, clock: Any) -> int:
    """Index into `plans` of the plan to use: `run(plan)` computes a plan's result into a fresh
    array and returns it. Each plan runs once to build or load it and check it against plans[0],
    then once on `clock`; a plan faster than plans[0] is timed again, with plans[0], and replaces
    it only when its best time is at most KEEP_RULES_MARGIN of plans[0]'s."""
    reference = run(plans[0])
    scale = float(np.max(np.abs(reference))) or 1.0
    tolerance = TOLERANCE.get(reference.dtype, 1e-3) * scale

    def timed(plan: Any) -> float:
        start = clock()
        run(plan)
        return clock() - start

    times = [timed(plans[0])]
    for plan in plans[1:]:
        agrees = float(np.max(np.abs(run(plan) - reference))) <= tolerance
        times.append(timed(plan) if agrees else math.inf)
    winner = min(range(len(plans)), key=times.__getitem__)
    if winner == 0:
        return 0
    best, rules = min(times[winner], timed(plans[winner])), min(times[0], timed(plans[0]))
    return winner if best <= KEEP_RULES_MARGIN * rules else 0


def _runner(kind: str, x_shape: tuple, w_shape: tuple, go_shape: tuple, groups: int, dtype: np.dtype) -> Any:
    """run(plan) for `fastest`: the core on fixed random data of the kind's operand shapes."""
    rng = np.random.default_rng(0)
    x5, w3, out4 = conv.conv2d_views(x_shape, w_shape, go_shape, groups)
    # uniform in [-1, 1): drawn in the dtype itself, several times faster than normal numbers
    x, w, out = (2 * rng.random(shape, np.float32).astype(dtype, copy=False) - 1 for shape in (x5, w3, out4))
    no_bias = np.zeros(0, dtype)
    _blas.prepare_blas(dtype)

    def arguments(plan: tuple) -> tuple:
        core, sizes = plan
        if kind == "forward":
            return (x, w, no_bias, False, np.empty(out4, dtype)) + tuple(sizes), 4
        if kind == "backward_input":
            return (out, w, np.empty(x5, dtype)) + tuple(sizes), 2
        return (x, out, np.empty(w3, dtype)) + tuple(sizes), 2

    def run(plan: tuple) -> np.ndarray:
        args, result = arguments(plan)
        plan[0](*args)
        return args[result]

    def ready(plan: tuple) -> bool:
        # Only machine code already built or cached is timed: a loser must not cost a compile.
        check = getattr(plan[0], "ready_for", None)
        return check is not None and check(*arguments(plan)[0])

    run.ready = ready
    return run
