"""numdiff.benchmark: statistics, call counts, interleaving and the peak formula (no timing asserts)."""

from __future__ import annotations

import pytest

from numdiff import benchmark
from numdiff.benchmark import Comparison, Timing, compare, peak_gflops, timeit


def test_timing_statistics_match_their_definitions():
    t = Timing((5.0, 1.0, 3.0, 2.0, 4.0), number=10)
    assert t.repeat == 5
    assert t.median == 3.0
    assert t.min == 1.0 and t.max == 5.0
    assert t.iqr == pytest.approx(2.0)  # 75th percentile 4.0 minus 25th 2.0
    assert "3 s median" in str(t)


def test_timeit_makes_warmup_plus_repeat_times_number_calls():
    calls = []
    t = timeit(lambda: calls.append(1), repeat=4, number=3, warmup=2)
    assert len(calls) == 2 + 4 * 3
    assert t.repeat == 4 and t.number == 3
    assert all(s >= 0 for s in t.samples)


def test_timeit_autorange_picks_a_count_from_the_1_2_5_series(monkeypatch):
    # A fake clock: each call "takes" 3 ms; 1, 2 and 5 calls stay under the 20 ms target, 10 pass it.
    clock = [0.0]

    def fake_call():
        clock[0] += 0.003

    monkeypatch.setattr(benchmark.time, "perf_counter", lambda: clock[0])
    t = timeit(fake_call, repeat=3)
    assert t.number == 10
    assert t.samples == pytest.approx((0.003, 0.003, 0.003))


def test_timeit_rejects_bad_counts():
    with pytest.raises(ValueError, match="repeat >= 1"):
        timeit(lambda: None, repeat=0)
    with pytest.raises(ValueError, match="number >= 1"):
        timeit(lambda: None, number=0)


def test_compare_alternates_the_starting_candidate_each_round():
    order = []
    candidates = {name: (lambda name=name: order.append(name)) for name in ("a", "b", "c")}
    table = compare(candidates, repeat=3, number=1, warmup=0)
    assert order == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert set(table.timings) == {"a", "b", "c"}
    assert table.baseline == "a"


def test_comparison_ratios_are_medians_over_the_baselines():
    table = Comparison(
        {"numdiff": Timing((2.0, 2.0, 2.0), 1), "numpy": Timing((1.0, 1.0, 4.0), 1)},
        baseline="numpy",
    )
    assert table.ratio("numdiff") == 2.0
    assert table.ratio("numpy") == 1.0
    rows = {row["name"]: row for row in table.rows()}
    assert rows["numdiff"]["vs numpy"] == 2.0
    text = str(table)
    assert "numdiff" in text and "2.00x" in text
    assert "<table>" in table._repr_html_()


def test_compare_validates_baseline_and_candidates():
    with pytest.raises(ValueError, match="baseline 'torch'"):
        compare({"numdiff": lambda: None}, baseline="torch")
    with pytest.raises(ValueError, match="at least one"):
        compare({})


def test_peak_gflops_is_the_product_of_its_stated_factors():
    peak = peak_gflops("float32", cores=2, fma_units=2, clock_ghz=2.5, simd_bits=512)
    assert peak.simd_lanes == 16
    assert peak.gflops == pytest.approx(2 * 2 * 16 * 2 * 2.5)
    assert peak_gflops("float64", cores=2, clock_ghz=2.5, simd_bits=512).simd_lanes == 8
    assert "2 FMA units per core assumed" in peak.assumptions
    assert str(peak).startswith("320.0 GFLOP/s float32 = 2 cores x 2 FMA units x 16 lanes x 2 x 2.50 GHz")
    one_core = peak_gflops("float32", cores=1, clock_ghz=2.5, simd_bits=512)
    assert "= 1 core x 2 FMA units" in str(one_core)


def test_peak_gflops_reads_this_machine(monkeypatch):
    fake = "processor : 0\nflags : fpu sse avx avx2 fma\ncpu MHz : 3000.0\nprocessor : 1\ncpu MHz : 2000.0\n"
    monkeypatch.setattr(benchmark, "_cpuinfo", lambda: fake)
    peak = peak_gflops("float32", cores=4)
    assert peak.simd_lanes == 8 and peak.clock_ghz == 3.0
    assert "AVX/AVX2" in peak.assumptions


def test_peak_gflops_asks_for_the_clock_when_it_cannot_read_it(monkeypatch):
    monkeypatch.setattr(benchmark, "_cpuinfo", lambda: "")
    with pytest.raises(ValueError, match="clock_ghz"):
        peak_gflops("float32", simd_bits=256)


def test_flop_counts():
    assert benchmark.matmul_flops(2, 3, 4) == 48
    # 1 image, 2->3 channels, 4x5 output, 3x3 kernel: 60 outputs x 2*2*9 flops
    assert benchmark.conv2d_flops(1, 2, 3, 4, 5, 3, 3) == 3 * 20 * 36


def test_compare_times_with_the_clock_it_is_given():
    # A fake CPU clock: each call of "slow" advances it 4 ms, of "fast" 1 ms; perf_counter is not read.
    ticks = [0.0]

    def advance(seconds):
        def call():
            ticks[0] += seconds
        return call

    table = benchmark.compare({"slow": advance(0.004), "fast": advance(0.001)}, repeat=3, number=2,
                              clock=lambda: ticks[0])
    assert table.timings["slow"].median == pytest.approx(0.004)
    assert table.ratio("fast") == pytest.approx(0.25)
