"""The benchmark scripts' command lines: an --only that selects nothing is refused up front, and
bench_models.py's --quick smoke run builds and steps its models in every candidate."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.parametrize("script", ["bench_cpu.py", "bench_compile.py", "bench_models.py", "bench_first_calls.py"])
def test_only_matching_no_workload_names_the_workloads(script):
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--only", "no such workload"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--only 'no such workload' matches no workload" in done.stderr
    assert ("char_lstm" if script in ("bench_models.py", "bench_first_calls.py") else "digits") in done.stderr  # the workloads it could name


def test_bench_models_quick_run_steps_every_candidate():
    pytest.importorskip("torch")
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_models.py"), "--quick", "--only", "char_gru,gcn"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| char_gru |", "| gcn |"))]
    assert len(rows) == 2 and "error" not in done.stdout and "Failed to build" not in done.stdout, done.stdout
    if importlib.util.find_spec("jax") is not None:  # the recurrent row's compile / jax cell is a ratio
        assert rows[0].split("|")[9].strip().replace(".", "").isdigit(), rows[0]
        assert rows[1].split("|")[9].strip() == "", rows[1]


@pytest.mark.parametrize("workload", ["char_lstm", "char_gru", "rnn_tanh", "word_lstm"])
def test_jax_sequence_step_trains_the_torch_model(workload):
    """The JAX jit step of a recurrent model starts from torch's weights and data, and after one Adam
    step its loss is torch's: the same model, cell maths, loss and update."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("jax")
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import _jax_steps_sequence
        import _models
    finally:
        sys.path.remove(str(BENCHMARKS))
    torch.manual_seed(0)
    torch_step = _models.WORKLOADS[workload](torch, True, lambda fn: fn)
    jax_step = _jax_steps_sequence.token_lm_step(workload, True)
    assert jax_step.loss() == pytest.approx(torch_step.loss(), rel=1e-5)
    torch_step()
    jax_step()
    assert jax_step.loss() == pytest.approx(torch_step.loss(), rel=1e-5)
    assert jax_step.loss() != pytest.approx(_models.WORKLOADS[workload](torch, True, lambda fn: fn).loss(), rel=1e-5)


def test_bench_import_reports_each_case_and_what_import_loaded():
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_import.py"), "--repeat", "1", "--cases", "numpy,import"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and "| case |" not in line]
    assert [row.split("|")[2].strip() for row in rows] == ["numpy", "import"], done.stdout
    assert "loaded:" not in done.stdout  # import numdiff ran none of numba, scipy, nn, func


@pytest.mark.parametrize(
    "workload",
    ["bilstm_classifier", "transformer_seq2seq", "efficientnet", "mlp_batchnorm", "rnn_scratch", "lstm_cell_loop",
     "text_classification", "siamese_triplet", "tcn", "groupnorm_cnn", "gru_cell_decoder", "lstm_seq2seq",
     "pinn", "maml", "wgan_gp"]
)
def test_probed_workloads_train_the_same_model_in_both_libraries(workload):
    """The rows benchmarks/_models_extra.py, _models_gaps.py and _models_higher.py add build the same model and data in
    numdiff (eager and compiled) and torch: equal losses before and after two steps, so the rows time
    the same work."""
    torch = pytest.importorskip("torch")
    import numdiff

    sys.path.insert(0, str(BENCHMARKS))
    try:
        import _models
    finally:
        sys.path.remove(str(BENCHMARKS))
    build = _models.WORKLOADS[workload]
    steps = [build(torch, True, lambda fn: fn), build(numdiff, True, lambda fn: fn), build(numdiff, True, numdiff.compile)]
    # Before any step the losses agree to float32 rounding. Adam's first step is lr * sign(g) wherever
    # |g| >> eps, so a gradient element that is zero up to rounding (a bias ahead of a BatchNorm, say:
    # efficientnet's stem bias gets 7e-8 from torch and another 7e-8 from numdiff on an Emerald Rapids)
    # moves by up to lr in either direction: after a step the losses agree to 1e-3, not 1e-4.
    for rel in (1e-4, 1e-3):
        losses = [step.loss() for step in steps]
        assert losses[1] == pytest.approx(losses[0], rel=rel) and losses[2] == pytest.approx(losses[0], rel=rel)
        for step in steps:
            step()



def test_settle_steps_until_no_parallel_build_is_pending(monkeypatch):
    """A first step may leave parallel kernels compiling in numdiff's helper process; settle steps
    on until no request is pending and a step asks for nothing new."""
    from numdiff.kernels import _background

    requests: dict[str, str] = {"conv core": "pending"}
    polls = {"count": 0}
    steps: list[dict[str, str]] = []

    def helper_requests():
        polls["count"] += 1
        if polls["count"] > 3:  # the helper finishes after a few polls
            requests.update({key: "done" for key in requests})
        return dict(requests)

    def step():
        steps.append(dict(requests))
        if len(steps) == 1:  # this step meets a new signature, which the helper takes too
            requests["gemm"] = "pending"

    monkeypatch.setattr(_background, "helper_requests", helper_requests)
    monkeypatch.setattr(_background.time, "sleep", lambda seconds: None)
    _background.settle(step, asked_before=0)
    assert len(steps) == 2 and steps[-1] == {"conv core": "done", "gemm": "done"}, steps
    _background.settle(step, asked_before=2)  # nothing asked since: no call
    assert len(steps) == 2


@pytest.mark.parametrize("harness", ["numdiff.benchmark", "benchmarks/_isolated.py"])
def test_timing_harnesses_settle_after_warm_up(monkeypatch, harness):
    from numdiff import benchmark
    from numdiff.kernels import _background

    settled = []
    monkeypatch.setattr(_background, "settle", lambda step, asked_before: settled.append(step))
    calls = []
    if harness == "numdiff.benchmark":
        benchmark.timeit(lambda: calls.append(1), repeat=1, number=1)
        benchmark.compare({"a": lambda: calls.append(1), "b": lambda: calls.append(2)}, repeat=1, number=1)
        assert len(settled) == 3
    else:
        sys.path.insert(0, str(BENCHMARKS))
        try:
            import _isolated
        finally:
            sys.path.remove(str(BENCHMARKS))
        monkeypatch.setattr(_isolated, "_resolve", lambda reference: lambda: lambda: calls.append(1))
        candidate = _isolated.InProcess.__new__(_isolated.InProcess)
        candidate.step = None
        assert "first_s" in candidate.request("build", builder="unused")
        assert len(settled) == 1
