"""numdiff.multiprocessing: tensors moved to shared memory are shared with child processes, under
fork and spawn (Hogwild training, as pytorch/examples' mnist_hogwild); other tensors are copied."""

import numpy as np
import pytest

import numdiff
import numdiff.multiprocessing as mp


def _add_one_everywhere(model, queue):
    with numdiff.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    queue.put(model.weight)  # a shared tensor goes back through a queue as its segment, not copied


def _fill(t, value):
    t.fill_(value)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_child_process_updates_the_parents_shared_model(method):
    context = mp.get_context(method)
    model = numdiff.nn.Linear(3, 2)
    before = model.weight.detach().numpy().copy()
    model.share_memory()
    assert model.weight.is_shared() and model.bias.is_shared()
    queue = context.Queue()
    worker = context.Process(target=_add_one_everywhere, args=(model, queue))
    worker.start()
    returned = queue.get(timeout=240)
    worker.join(timeout=240)
    assert worker.exitcode == 0
    np.testing.assert_allclose(model.weight.detach().numpy(), before + 1.0)
    assert type(returned) is numdiff.nn.Parameter and returned.is_shared()
    returned.detach().mul_(0.0)  # the returned tensor is the same memory again
    assert float(model.weight.detach().abs().sum()) == 0.0


def test_unshared_tensors_are_copied_and_share_memory_is_idempotent():
    plain = numdiff.zeros(4)
    assert not plain.is_shared() and not plain.is_pinned() and plain.pin_memory() is plain
    worker = mp.get_context("fork").Process(target=_fill, args=(plain, 5.0))
    worker.start()
    worker.join(timeout=120)
    assert plain.tolist() == [0.0, 0.0, 0.0, 0.0]
    shared = numdiff.arange(4.0).share_memory_()
    data = shared._data
    assert shared.share_memory_()._data is data and shared.tolist() == [0.0, 1.0, 2.0, 3.0]
    worker = mp.get_context("fork").Process(target=_fill, args=(shared, 5.0))
    worker.start()
    worker.join(timeout=120)
    assert shared.tolist() == [5.0, 5.0, 5.0, 5.0]


def test_the_standard_names_are_there():
    import multiprocessing

    assert mp.Process is multiprocessing.Process and mp.cpu_count is multiprocessing.cpu_count
    assert callable(mp.set_start_method)
