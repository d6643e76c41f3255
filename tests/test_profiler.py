"""numdiff.profiler against torch.profiler's contract: events, averages, tables, traces, schedules."""

from __future__ import annotations

import json

import numba
import numpy as np
import pytest

import numdiff
from numdiff import _profiling, nn
from numdiff.profiler import ProfilerAction, profile, record_function, schedule, tensorboard_trace_handler


def _model_and_step():
    numdiff.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
    optimizer = numdiff.optim.Adam(model.parameters(), lr=1e-3)
    x, y = numdiff.randn(8, 1, 6, 6), numdiff.randint(0, 3, (8,))

    def step():
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    step()
    return step


def test_a_training_step_shows_ops_backward_modules_and_the_optimizer():
    step = _model_and_step()
    with profile() as prof:
        step()
        step()
    assert _profiling.recorder is None  # off again after the block
    averages = {e.key: e for e in prof.key_averages()}
    assert averages["conv2d"].count == 2 and averages["linear"].count == 2
    assert "Conv2dBackward" in averages and "LinearBackward" in averages
    assert averages["Optimizer.step#Adam.step"].count == 2
    assert averages["nn.Module: Sequential"].count == 2
    # A module's total includes the ops inside it; its self time excludes them.
    sequential = averages["nn.Module: Sequential"]
    assert sequential.cpu_time_total >= averages["conv2d"].cpu_time_total
    assert sequential.self_cpu_time_total < sequential.cpu_time_total
    # Self times partition the recorded time: they add up to the top-level events' totals.
    events = prof.events()
    assert sum(e.self_cpu_time_total for e in events) == pytest.approx(
        sum(e.cpu_time_total for e in events if e.category in ("module", "backward", "optimizer", "op")
            and not _inside_another(e, events)), rel=1e-9)


def _inside_another(event, events):
    return any(o is not event and o.thread == event.thread and o.start_ns <= event.start_ns and event.end_ns <= o.end_ns
               and (o.start_ns, -o.end_ns) < (event.start_ns, -event.end_ns) for o in events)


def test_the_table_sorts_and_limits_rows_and_refuses_an_unknown_key():
    step = _model_and_step()
    with profile(profile_memory=True) as prof:
        step()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
    lines = table.splitlines()
    assert "Self CPU %" in lines[1] and "CPU Mem" in lines[1] and "# of Calls" in lines[1]
    assert len(lines) == 3 + 5 + 2 and lines[-1].startswith("Self CPU time total:")
    with pytest.raises(ValueError, match="sort_by='fastest'"):
        prof.key_averages().table(sort_by="fastest")


def test_shapes_and_memory_per_op():
    x = numdiff.randn(4, 5)
    w = numdiff.randn(3, 5)
    with profile(record_shapes=True, profile_memory=True) as prof:
        nn.functional.linear(x, w)
    (linear,) = [e for e in prof.key_averages(group_by_input_shape=True) if e.key == "linear"]
    assert linear.input_shapes == str([[4, 5], [3, 5], []])
    assert linear.cpu_memory_usage == 4 * 3 * 4  # the float32 output it allocated
    with pytest.raises(ValueError, match="record_shapes=True"):
        profile().key_averages(group_by_input_shape=True)


def test_record_function_regions_nest_around_ops():
    @record_function("decorated")
    def work(t):
        return (t * 2).sum()

    with profile() as prof:
        with record_function("outer"):
            work(numdiff.ones(3))
    events = {e.name: e for e in prof.events()}
    assert events["outer"].start_ns <= events["decorated"].start_ns <= events["mul"].start_ns
    assert events["outer"].children_ns == events["decorated"].end_ns - events["decorated"].start_ns


def test_numba_compilation_is_its_own_row():
    @numba.njit
    def freshly_defined_kernel(a):
        return a.sum() + 1.0

    with profile() as prof:
        numdiff.ones(2) * 2
        freshly_defined_kernel(np.ones(3))
    compiles = [e for e in prof.events() if e.category == "compile"]
    assert "numba compile: freshly_defined_kernel" in [e.name for e in compiles]
    assert prof.compile_time_ms() > 0


def test_chrome_trace_is_valid_json_with_complete_events(tmp_path):
    step = _model_and_step()
    with profile(record_shapes=True) as prof:
        step()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())["traceEvents"]
    assert {"conv2d", "Optimizer.step#Adam.step"} <= {e["name"] for e in trace}
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in trace)


def test_schedule_records_only_active_steps_and_hands_each_cycle_over(tmp_path):
    assert [schedule(wait=1, warmup=1, active=2, repeat=1)(i) for i in range(5)] == [
        ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE,
        ProfilerAction.NONE,
    ]  # fmt: skip
    step = _model_and_step()
    ready = []
    handler = tensorboard_trace_handler(tmp_path, worker_name="worker0")

    def on_ready(prof):
        ready.append(sorted({e.name for e in prof.events() if e.category == "step"}))
        handler(prof)

    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=1), on_trace_ready=on_ready) as prof:
        for _ in range(6):
            step()
            prof.step()
    assert ready == [["ProfilerStep#2", "ProfilerStep#3"]]
    assert len(list(tmp_path.glob("worker0.*.pt.trace.json"))) == 1
    with pytest.raises(ValueError, match="active >= 1"):
        schedule(wait=0, warmup=0, active=0)


def test_profiles_do_not_nest():
    with profile():
        with pytest.raises(RuntimeError, match="already recording"):
            with profile():
                pass
