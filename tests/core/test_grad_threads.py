"""Backward passes in several threads into one leaf: `.grad` accumulation loses nothing."""

from __future__ import annotations

import threading

import numpy as np

import numdiff as nd


def _backward_in_threads(w: nd.Tensor, c: nd.Tensor, threads: int, passes: int) -> None:
    start = threading.Barrier(threads)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            start.wait()
            for _ in range(passes):
                (w * c).sum().backward()
        except BaseException as error:  # surfaced in the main thread below
            errors.append(error)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors, errors


def test_concurrent_backward_into_one_leaf_accumulates_every_pass():
    # Large enough that NumPy releases the GIL inside `+=`, which is where updates were lost.
    for _ in range(3):
        w = nd.zeros(400_000, dtype=nd.float64, requires_grad=True)
        c = nd.ones(400_000, dtype=nd.float64)
        _backward_in_threads(w, c, threads=2, passes=20)
        np.testing.assert_array_equal(w.grad.numpy(), np.full(400_000, 40.0))


def test_concurrent_backward_into_an_existing_grad_adds_to_it():
    w = nd.zeros(200_000, dtype=nd.float64, requires_grad=True)
    w.grad = nd.full((200_000,), 0.5, dtype=nd.float64)
    c = nd.full((200_000,), 2.0, dtype=nd.float64)
    _backward_in_threads(w, c, threads=3, passes=10)
    np.testing.assert_array_equal(w.grad.numpy(), np.full(200_000, 60.5))

