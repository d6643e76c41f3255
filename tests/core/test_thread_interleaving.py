"""Threads running compile, vmap and eager training at once: each thread's transforms are its own.

Each test forces the interleaving it is about with barriers (one thread is inside a vmap or a
trace while the other runs), or takes its steps in a schedule Hypothesis draws, so the outcome
never depends on the scheduler. Results are compared
with the same work run in one thread.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numdiff as nd
from numdiff import func
from numdiff.compile.trace import Tracer, Tracing

ROOT = Path(__file__).resolve().parents[2]


def _run_together(*works: Callable[[], object]) -> list:
    """Run each work in its own thread; their results, or the first error raised."""
    results: list = [None] * len(works)
    errors: list[BaseException] = []

    def run(index: int, work: Callable[[], object]) -> None:
        try:
            results[index] = work()
        except BaseException as error:  # surfaced in the main thread below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i, w)) for i, w in enumerate(works)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return results


def _data(seed: int, *shape: int) -> nd.Tensor:
    return nd.tensor(np.random.default_rng(seed).standard_normal(shape))


def _train_steps(steps: int, pause: Callable[[int], None] = lambda step: None) -> list[float]:
    """A small eager training loop (in-place updates, .item(), random init); its losses."""
    generator = nd.Generator().manual_seed(3)
    w = nd.randn(4, 2, generator=generator, dtype=nd.float64).requires_grad_()
    x, y = _data(1, 8, 4), _data(2, 8, 2)
    losses = []
    for step in range(steps):
        pause(step)
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with nd.no_grad():
            w -= 0.1 * w.grad
            w.grad.zero_()
        losses.append(loss.item())
        assert bool(loss > -1.0)
    return losses


def test_two_threads_in_vmap_at_once_keep_their_own_batch_state():
    inside = threading.Barrier(2)

    def per_example(scale: float) -> Callable[[nd.Tensor, nd.Tensor], nd.Tensor]:
        def f(x: nd.Tensor, w: nd.Tensor) -> nd.Tensor:
            h = (x * scale).sin()
            inside.wait()  # both threads are inside their vmap from here on
            return (h @ w).tanh() + x.sum()

        return f

    x3, x5 = _data(0, 3, 4), _data(1, 5, 4)
    w = _data(2, 4)
    a, b = _run_together(
        lambda: func.vmap(per_example(1.0), in_dims=(0, None))(x3, w),
        lambda: func.vmap(per_example(2.0), in_dims=(0, None))(x5, w),
    )
    for x, scale, out in ((x3, 1.0, a), (x5, 2.0, b)):
        expected = np.stack([np.tanh(np.sin(r * scale) @ w.numpy()) + r.sum() for r in x.numpy()])
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


def test_a_trace_in_one_thread_leaves_eager_training_in_another_alone():
    reference = _train_steps(4)
    tracing = threading.Event()
    trained = threading.Event()
    x, w = _data(4, 5, 4), _data(5, 4, 3).requires_grad_()

    def trace() -> Tracer:
        tracer = Tracer()
        tracer.add_input(x, 0)
        with Tracing(tracer):
            h = (x @ w).relu()
            tracing.set()  # the trace is active in this thread now
            trained.wait(timeout=60)
            (h * h).sum()
        return tracer

    def pause(index: int) -> None:
        if index == 1:
            tracing.wait(timeout=60)  # the other steps run while the other thread traces

    def train() -> list[float]:
        try:
            return _train_steps(4, pause)
        finally:
            trained.set()

    losses, tracer = _run_together(train, trace)
    assert losses == reference
    # The trace holds this thread's four ops (matmul, relu, mul, sum), none of the training's.
    assert [getattr(call.function, "op_name", None) for call in tracer.forward.calls] == ["matmul", "relu", "mul", "sum"]


def test_compiling_in_one_thread_while_another_trains_eagerly():
    reference = _train_steps(30)
    x, w = _data(4, 5, 4), _data(5, 4, 3)
    expected = (np.maximum(x.numpy() @ w.numpy(), 0.0) ** 2).sum()

    def compile_many() -> list:
        # Each new function is traced on its first call: traces overlap the other thread's steps.
        return [nd.compile(lambda a, b: ((a @ b).relu() ** 2).sum())(x, w).item() for _ in range(30)]

    losses, results = _run_together(lambda: _train_steps(30), compile_many)
    assert losses == reference
    np.testing.assert_allclose(results, expected, rtol=1e-12)


def test_vmap_with_randomness_error_in_one_thread_leaves_dropout_in_another_alone():
    inside = threading.Event()
    done = threading.Event()

    def in_vmap(x: nd.Tensor) -> nd.Tensor:
        inside.set()
        done.wait(timeout=60)
        return x * 2

    def dropout() -> nd.Tensor:
        inside.wait(timeout=60)
        try:
            return nd.nn.functional.dropout(nd.ones(1000, dtype=nd.float64), p=0.5)
        finally:
            done.set()

    doubled, dropped = _run_together(lambda: func.vmap(in_vmap)(nd.ones(3)), dropout)
    np.testing.assert_array_equal(doubled.numpy(), np.full(3, 2.0))
    assert set(np.unique(dropped.numpy())) == {0.0, 2.0}
    with pytest.raises(func.VmapRandomnessError):  # in its own thread, vmap still refuses
        func.vmap(lambda x: nd.nn.functional.dropout(x, p=0.5))(nd.ones(3, 2))


def test_func_grad_in_one_thread_leaves_another_threads_in_place_updates_alone():
    inside = threading.Event()
    done = threading.Event()

    def loss(w: nd.Tensor) -> nd.Tensor:
        inside.set()
        done.wait(timeout=60)
        return (w * w).sum()

    def accumulate() -> nd.Tensor:
        # Eager: a buffer updated in place with a value that requires grad (no transform here).
        inside.wait(timeout=60)
        try:
            x = nd.tensor([1.0, 2.0], requires_grad=True)
            buffer = nd.zeros(2)
            buffer.add_(x * 3)
            buffer.sum().backward()
            return x.grad
        finally:
            done.set()

    gradient, x_grad = _run_together(lambda: func.grad(loss)(nd.tensor([1.0, -2.0])), accumulate)
    np.testing.assert_array_equal(gradient.numpy(), [2.0, -4.0])
    np.testing.assert_array_equal(x_grad.numpy(), [3.0, 3.0])


def test_chunked_same_randomness_in_one_thread_does_not_replay_another_threads_draws():
    second_chunk = threading.Event()
    drawn = threading.Event()
    calls = []

    def shared_noise(x: nd.Tensor) -> nd.Tensor:
        calls.append(1)
        if len(calls) == 2:  # the second chunk, before its draw
            second_chunk.set()
            drawn.wait(timeout=60)
        return x + nd.randn(3, dtype=nd.float64)

    def other_thread() -> list:
        second_chunk.wait(timeout=60)
        try:
            return [nd.randn(3, dtype=nd.float64).numpy() for _ in range(2)]
        finally:
            drawn.set()

    out, draws = _run_together(
        lambda: func.vmap(shared_noise, randomness="same", chunk_size=2)(nd.zeros(4, dtype=nd.float64)),
        other_thread,
    )
    rows = out.numpy()
    np.testing.assert_array_equal(rows, np.broadcast_to(rows[0], rows.shape))  # one draw for the batch
    assert not np.array_equal(draws[0], draws[1])
    assert not any(np.array_equal(d, rows[0]) for d in draws)


def test_threads_drawing_from_the_default_generator_get_disjoint_parts_of_its_stream():
    blocks, rounds, size = 4, 25, 64
    nd.manual_seed(11)
    sequential = {tuple(nd.randn(size, dtype=nd.float64).tolist()) for _ in range(blocks * rounds)}
    nd.manual_seed(11)
    start = threading.Barrier(blocks)

    def draw() -> list:
        start.wait()
        return [tuple(nd.randn(size, dtype=nd.float64).tolist()) for _ in range(rounds)]

    drawn = [block for result in _run_together(*[draw] * blocks) for block in result]
    assert len(set(drawn)) == len(drawn) == blocks * rounds
    assert set(drawn) == sequential


def test_the_first_matrix_product_from_several_threads_at_once_compiles_once():
    # A fresh process: the BLAS set-up (and Numba's fixed gemm builds) happens on first use.
    script = (
        "import threading, numdiff\n"
        "start = threading.Barrier(4); errors = []\n"
        "def run():\n"
        "    start.wait()\n"
        "    try:\n"
        "        a = numdiff.ones(32, 32); assert (a @ a).sum().item() == 32 * 32 * 32\n"
        "    except BaseException as error:\n"
        "        errors.append(repr(error))\n"
        "threads = [threading.Thread(target=run) for _ in range(4)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print(errors)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


class _Turns:
    """A schedule of which thread runs its next step: a thread waits for its turn before each step."""

    def __init__(self, schedule: list[int]) -> None:
        self.schedule = schedule
        self.position = 0
        self.failed = False
        self.condition = threading.Condition()

    def step(self, who: int, work: Callable[[], object]) -> object:
        with self.condition:
            if not self.condition.wait_for(lambda: self.failed or self.schedule[self.position] == who, timeout=60):
                self.failed = True
            if self.failed:
                self.condition.notify_all()
                raise RuntimeError(f"thread {who} gave up waiting at step {self.position} of {self.schedule}")
        try:
            return work()
        except BaseException:
            self.failed = True
            raise
        finally:
            with self.condition:
                self.position += 1
                self.condition.notify_all()


STEPS = 4


@settings(max_examples=12)
@given(st.permutations([0] * STEPS + [1] * STEPS + [2] * STEPS))
def test_vmap_tracing_and_training_interleaved_in_any_order_match_one_thread(schedule):
    turns = _Turns(list(schedule))
    x, w = _data(6, 3, 4), _data(7, 4)
    column = w.unsqueeze(1)

    def vmapped() -> nd.Tensor:
        def per_example(r: nd.Tensor) -> nd.Tensor:
            h = r
            for i in range(STEPS):  # every turn is taken inside the vmap
                h = turns.step(0, lambda h=h, i=i: (h * w).sin() + i)
            return h.sum()

        return func.vmap(per_example)(x)

    def traced() -> Tracer:
        tracer = Tracer()
        tracer.add_input(x, 0)
        with Tracing(tracer):
            h = x
            for _ in range(STEPS):
                h = turns.step(1, lambda h=h: (h @ column).tanh() * h)
        return tracer

    def trained() -> list[float]:
        pauses = iter(range(STEPS))
        return _train_steps(STEPS, lambda step: turns.step(2, lambda: next(pauses)))

    batched, tracer, losses = _run_together(vmapped, traced, trained)
    h = x.numpy()
    for i in range(STEPS):
        h = np.sin(h * w.numpy()) + i
    np.testing.assert_allclose(batched.numpy(), h.sum(1), rtol=1e-12)
    assert [getattr(c.function, "op_name", None) for c in tracer.forward.calls] == ["matmul", "tanh", "mul"] * STEPS
    assert losses == _train_steps(STEPS)
