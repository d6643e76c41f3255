"""Memory: the graph is freed by reference counting (no global tape, no cycles), and many small
forward+backward steps leave no growth."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

import numdiff

GROWTH_LIMIT = 16 * 1024  # bytes over 9,000 measured steps: a leak of one small object per step is more


def _growth(step: Callable[[], None], warmup: int, measured: int) -> int:
    """Bytes still allocated after `measured` steps, compared with after the warm-up (traced by tracemalloc)."""
    for _ in range(warmup):
        step()
    tracemalloc.start()
    try:
        for _ in range(warmup):
            step()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(measured):
            step()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return after - before


def _training_step_on(w: numdiff.Tensor, x: numdiff.Tensor) -> Callable[[], None]:
    def step() -> None:
        loss = (w * x).sin().sum()
        loss.backward()
        with numdiff.no_grad():
            w.sub_(0.001 * w.grad)
        w.grad = None

    return step


def test_ten_thousand_small_steps_leave_no_memory_growth():
    w = numdiff.randn(16, requires_grad=True)
    x = numdiff.randn(16)
    assert _growth(_training_step_on(w, x), warmup=1000, measured=9000) < GROWTH_LIMIT


def test_growth_measure_detects_a_leak_of_one_object_per_step():
    kept = []
    w = numdiff.randn(4, requires_grad=True)
    step = _training_step_on(w, numdiff.randn(4))

    def leaking_step() -> None:
        step()
        kept.append(object())

    assert _growth(leaking_step, warmup=100, measured=2000) > GROWTH_LIMIT


def test_a_forward_backward_step_makes_no_reference_cycles():
    w = numdiff.randn(6, requires_grad=True)
    x = numdiff.randn(6)

    def step() -> None:
        h = (w * x).reshape(2, 3)
        h.retain_grad()
        h.register_hook(lambda g: g * 1)
        loss = (h.exp()[:, 1:] * h.sum(0)[1:]).logsumexp(1).mean() + h.max() + h.softmax(1).var()
        loss.backward()
        w.grad = None

    step()
    gc.collect()
    gc.disable()
    try:
        step()
        assert gc.collect() == 0, "the graph should be freed by reference counting alone"
    finally:
        gc.enable()


def test_a_graph_dropped_without_backward_makes_no_reference_cycles():
    w = numdiff.randn(6, requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        loss = ((w * 2).exp() / w.sum()).sum()
        del loss
        assert gc.collect() == 0
    finally:
        gc.enable()
