"""numdiff.utils.benchmark's Measurement has PyTorch's read-outs (title, as_row_name,
significant_figures, has_warnings, meets_confidence, merge), and a Timer asked for more threads
than Numba's pool has runs on the whole pool (the benchmark recipe asks for 2 on any machine).
Tests read the statistics of made-up times, never a clock."""

from __future__ import annotations

import numpy as np
import pytest
import torch.utils.benchmark as torch_benchmark

from numdiff.utils.benchmark import Measurement, Timer


def _pair(times, number=10, **spec):
    raw = [t * number for t in times]
    ours = Measurement(number, raw, dict(spec))
    task = torch_benchmark.TaskSpec(stmt=spec["stmt"], setup="pass", label=spec.get("label"), sub_label=spec.get("sub_label"))
    theirs = torch_benchmark.Measurement(number, raw, task)
    return ours, theirs


@pytest.mark.parametrize("times", [[1e-3, 1.001e-3, 0.999e-3, 1.002e-3], [1.0, 2.0, 3.0, 9.0], [5e-6, 5e-6, 5e-6]])
def test_read_outs_match_pytorchs(times):
    ours, theirs = _pair(times, stmt="x * y", label="Mul", sub_label="float32")
    assert ours.title == theirs.title == "Mul: float32"
    assert ours.as_row_name == theirs.as_row_name == "float32"
    assert ours.significant_figures == theirs.significant_figures
    assert ours.has_warnings == theirs.has_warnings
    assert ours.meets_confidence(0.1) == theirs.meets_confidence(0.1)
    np.testing.assert_allclose([ours.median, ours.mean], [theirs.median, theirs.mean])


def test_merge_joins_the_blocks_of_one_task():
    a = Measurement(10, [1.0, 2.0], {"stmt": "f()", "label": "L"})
    b = Measurement(5, [1.5], {"stmt": "f()", "label": "L"})
    c = Measurement(10, [4.0], {"stmt": "g()", "label": "L"})
    merged = Measurement.merge([a, b, c])
    assert len(merged) == 2
    assert sorted(merged[0].times) == pytest.approx([0.1, 0.2, 0.3])


def test_a_timer_asking_for_more_threads_than_the_pool_runs_and_records_the_request():
    m = Timer("sum(range(10))", num_threads=10**4).timeit(3)
    assert m.task_spec["num_threads"] == 10**4 and len(m.times) == 1


def test_unknown_attributes_and_unimplemented_timer_methods_say_so():
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = Measurement(1, [1.0]).nothing
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        Timer("1").autorange()
    with pytest.raises(NotImplementedError, match="timeit"):
        Timer("1").repeat()
