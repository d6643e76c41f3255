"""Module paths that PyTorch programs import exist and do real work: numdiff.utils.benchmark
(Timer, Measurement, Compare), numdiff.compiler and numdiff._inductor.utils. Tests never assert
on wall-clock values, only on how the measurements are made and reported."""

import importlib

import pytest

import numdiff
from numdiff.utils.benchmark import Compare, Measurement, Timer

PATHS = [
    "numdiff.utils.benchmark", "numdiff.utils.data.dataloader", "numdiff.utils.data.sampler",
    "numdiff.utils.data.dataset", "numdiff.multiprocessing", "numdiff.compiler", "numdiff._inductor.utils",
]  # fmt: skip


@pytest.mark.parametrize("path", PATHS)
def test_the_module_path_imports(path):
    assert importlib.import_module(path).__all__


class _FakeClock:
    """A fake clock that only `run` advances, by 1 ms: a block of n runs takes n ms."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def run(self):
        self.now += 0.001


def test_timer_runs_the_statement_with_its_globals_and_setup():
    calls = []
    timer = Timer("record(x)", setup="x = 41 + 1", globals={"record": calls.append})
    measurement = timer.timeit(5)
    assert calls == [42] * 6  # one warm-up run, then five timed
    assert measurement.number_per_run == 5 and len(measurement.raw_times) == 1
    assert measurement.median == measurement.raw_times[0] / 5


def test_blocked_autorange_runs_blocks_until_min_run_time_on_its_clock():
    clock = _FakeClock()
    seen = []
    measurement = Timer(clock.run, timer=clock).blocked_autorange(callback=lambda n, t: seen.append(n),
                                                                      min_run_time=0.05)
    assert measurement.number_per_run == 10  # the first block size whose block takes >= 10 ms
    assert len(measurement.raw_times) == len(seen) == 5 and measurement.raw_times == pytest.approx([0.01] * 5)
    assert all(n == 10 for n in seen) and measurement.median == pytest.approx(0.001)
    assert measurement.times == [t / measurement.number_per_run for t in measurement.raw_times]


def test_adaptive_autorange_stops_once_the_spread_is_small():
    clock = _FakeClock()
    measurement = Timer(clock.run, timer=clock).adaptive_autorange(threshold=0.5, min_run_time=0.0)
    assert len(measurement.raw_times) >= 3 and measurement.iqr <= 0.5 * measurement.median


def test_compare_prints_one_row_per_sub_label_and_one_column_per_description():
    def fake(label, sub_label, description, seconds):
        spec = {"label": label, "sub_label": sub_label, "description": description, "stmt": "s", "num_threads": 1}
        return Measurement(10, [seconds * 10] * 3, spec)

    table = str(Compare([fake("matmul", "n=16", "numdiff", 2e-6), fake("matmul", "n=16", "numpy", 1e-6),
                         fake("matmul", "n=32", "numdiff", 8e-6)]))
    lines = table.splitlines()
    assert "matmul" in lines[0] and "numdiff" in lines[1] and "numpy" in lines[1]
    assert lines[2].startswith("n=16 (1 threads)") and "2.0" in lines[2] and "1.0" in lines[2]
    assert lines[3].startswith("n=32 (1 threads)") and "8.0" in lines[3]
    assert "Times are in us" in table
    with pytest.raises(TypeError, match="expected Measurements"):
        Compare([1.0])


def test_timer_refuses_other_languages_and_bad_thread_counts():
    with pytest.raises(ValueError, match="numdiff times Python statements only"):
        Timer("x", language="c++")
    with pytest.raises(ValueError, match="num_threads must be a positive int"):
        Timer("x", num_threads=0)


def test_compiler_reports_whether_it_is_tracing_and_reset_keeps_compiled_functions_working():
    seen = []
    f = numdiff.compile(lambda x: (seen.append(numdiff.compiler.is_compiling()), x * 2)[1])
    assert f(numdiff.ones(2)).tolist() == [2.0, 2.0]
    assert seen == [True] and numdiff.compiler.is_compiling() is False
    numdiff.compiler.reset()
    with numdiff._inductor.utils.fresh_inductor_cache():
        g = numdiff.compile(lambda x: x + 1)
        assert g(numdiff.ones(2)).tolist() == [2.0, 2.0]
    assert f(numdiff.ones(2)).tolist() == [2.0, 2.0]
