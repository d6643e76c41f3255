"""Training steps of the model families in PyTorch's examples: numdiff eager, numdiff.compile and
PyTorch eager, the same weights, at 1 and 2 threads.

    python benchmarks/bench_models.py [--threads 1,2] [--repeat 7] [--only char_lstm,gcn]
                                      [--quick] [--cpu-time] [--same-process [--torch-first]]
                                      [--markdown FILE]

Workloads (benchmarks/_models.py, each written once against either library): char-level LSTM,
GRU and Elman RNN language models, word_language_model's two-layer LSTM, a word-level
transformer LM, a minGPT-sized decoder, a CIFAR CNN with BatchNorm, a small ResNet, a DCGAN generator + discriminator step, a VAE, super-resolution with
pixel shuffle, a style-transfer net with InstanceNorm and upsampling, per-sample gradients
through vmap, a GCN, a MobileNetV2-style net with depthwise convolutions, and (benchmarks/_models_more.py) a U-Net, a GRU translator with attention, a
small vision transformer, a 1-D conv classifier and an MLP trained with SGD and momentum. benchmarks/_models_extra.py and
_models_gaps.py add the families found by probing: a bidirectional LSTM classifier, nn.Transformer,
an EfficientNet-style net, an MLP with BatchNorm1d, hand-written RNN and LSTMCell/GRUCell loops, an
EmbeddingBag text classifier, a triplet-loss CNN with PReLU, a dilated-conv TCN, a GroupNorm CNN and an
LSTM encoder-decoder; _models_higher.py adds steps that differentiate gradients (a physics-informed
network, MAML, a WGAN-GP critic). One step is forward, backward and an Adam update (per_sample_grads: the
per-sample gradients). Each candidate runs in a worker process of its own that imports only its
library (benchmarks/_isolated.py; ``--same-process`` imports both in this one, numdiff first unless
``--torch-first``); they alternate round by round, and the medians and the
ratios to PyTorch eager are reported, with the first call of the compiled step (tracing and
compiling, or loading the disk cache). The recurrent models also run as a JAX jit step
(benchmarks/_jax_steps_sequence.py) when jax is installed, and the table adds compile / jax; the
column is blank without jax, under ``--cpu-time`` (XLA runs the step on threads of its own,
which one thread's CPU time does not see) and for the other models. A candidate that fails to build is reported with its
error, and the others still run. ``--quick`` shrinks every model and runs one round at one
thread: a smoke run (tests/test_bench_scripts.py), not a measurement. ``--cpu-time`` times each
worker's CPU time (one thread), for a loaded machine. Not run by the timing-free tests.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _isolated  # noqa: E402 - benchmarks/_isolated.py, one process per candidate
import _jax_steps_sequence  # noqa: E402 - benchmarks/_jax_steps_sequence.py, the JAX recurrent steps
import _models  # noqa: E402 - benchmarks/_models.py, the training steps

CANDIDATES = {"numdiff eager": "numdiff", "numdiff compile": "numdiff", "torch eager": "torch", "jax jit": "jax"}


def build_step(workload: str, candidate: str, quick: bool):
    """The step of `workload` for `candidate` (a key of CANDIDATES), made in the worker."""
    if candidate == "jax jit":
        return _jax_steps_sequence.token_lm_step(workload, quick)
    if candidate == "torch eager":
        import torch

        torch.manual_seed(0)
        return _models.WORKLOADS[workload](torch, quick, lambda fn: fn)
    import numdiff

    numdiff.manual_seed(0)
    compile_fn = numdiff.compile if candidate == "numdiff compile" else (lambda fn: fn)
    return _models.WORKLOADS[workload](numdiff, quick, compile_fn)


def _error_line(error: Exception) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[-1].strip()[:120] if lines else type(error).__name__


def run_workload(workload: str, threads: int, args: argparse.Namespace) -> dict:
    """{"ms": {candidate: median ms}, "first_s": compile's first call, "errors": {...}}."""
    result: dict = {"ms": {}, "first_s": None, "errors": {}}
    with_jax = workload in _models.TOKEN_LMS and args.jax
    here = {name: library for name, library in CANDIDATES.items() if name != "jax jit" or with_jax}
    with _isolated.candidates(here, threads, args.cpu_time, args.same_process) as started:
        # Each worker imports its library as it starts: wait for every one, so that no import (torch's
        # takes 1-2 s of CPU) shares the cores with the compiled step's first call, timed below.
        for worker in started.values():
            try:
                worker.request("call", function="os:getpid")
            except RuntimeError:
                pass  # its build below fails too, and reports why
        built = {}
        for name, worker in started.items():
            try:
                reply = worker.request("build", builder="bench_models:build_step",
                                       kwargs={"workload": workload, "candidate": name, "quick": args.quick})  # fmt: skip
            except RuntimeError as error:
                result["errors"][name] = _error_line(error)
                continue
            built[name] = worker
            if name == "numdiff compile":
                result["first_s"] = reply["first_s"]
        if built:
            numbers = {name: 1 for name in built} if args.quick else None
            rounds = _isolated.compare(built, args.repeat, numbers)
            result["ms"] = {name: r.median * 1e3 for name, r in rounds.items()}
    return result


def _ratio(result: dict, name: str, baseline: str = "torch eager") -> str:
    ms = result["ms"]
    if name not in ms or baseline not in ms:
        return "-"
    return f"{ms[name] / ms[baseline]:.2f}"


def _row(workload: str, threads: int, result: dict) -> str:
    ms, errors = result["ms"], result["errors"]
    cells = [f"{ms[name]:.2f}" if name in ms else "error" if name in errors else "" for name in CANDIDATES]
    first = "-" if result["first_s"] is None else f"{result['first_s']:.1f}"
    jax = _ratio(result, "numdiff compile", "jax jit") if "jax jit" in ms else ""
    return (f"| {workload} | {threads} | " + " | ".join(cells)
            + f" | {_ratio(result, 'numdiff eager')} | {_ratio(result, 'numdiff compile')} | {jax} | {first} |")  # fmt: skip


HEADER = (
    "| model | threads | numdiff eager ms | numdiff compile ms | torch eager ms | jax jit ms | eager / torch "
    "| compile / torch | compile / jax | compile first call s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="", help="comma-separated words; workloads whose name contains one")
    parser.add_argument("--quick", action="store_true", help="tiny shapes, one round, one thread: a smoke run")
    parser.add_argument("--cpu-time", action="store_true", help="time each worker's CPU time (one thread)")
    parser.add_argument("--same-process", action="store_true", help="all candidates in this process")
    parser.add_argument("--torch-first", action="store_true",
                        help="with --same-process: import torch before numdiff, as a notebook that starts with it")
    parser.add_argument("--markdown", type=Path, help="append the table to this Markdown file")
    args = parser.parse_args()
    if args.torch_first:
        if not args.same_process:
            parser.error("--torch-first orders the imports of one process: use it with --same-process")
        # torch's own libgomp then loads before numdiff sets GOMP_SPINCOUNT (numdiff/_threads.py).
        import torch  # noqa: F401
    names = list(_models.WORKLOADS)
    if args.only:
        words = [w.strip() for w in args.only.split(",") if w.strip()]
        names = [n for n in names if any(w in n for w in words)]
        if not names:
            parser.error(f"--only {args.only!r} matches no workload; workloads: {', '.join(_models.WORKLOADS)}")
    thread_counts = [1] if args.quick or args.cpu_time else [int(t) for t in args.threads.split(",")]
    if args.quick:
        args.repeat = 1
    args.jax = importlib.util.find_spec("jax") is not None and not args.cpu_time
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    print(f"# bench_models {time.strftime('%Y-%m-%d %H:%M')} {platform.processor() or platform.machine()}, "
          f"load average {' '.join(f'{x:.2f}' for x in load)}{', quick' if args.quick else ''}"
          f"{', CPU time' if args.cpu_time else ''}")  # fmt: skip
    print(HEADER)
    rows = []
    errors = []
    for threads in thread_counts:
        for name in names:
            result = run_workload(name, threads, args)
            rows.append(_row(name, threads, result))
            print(rows[-1], flush=True)
            errors += [f"- {name}, {threads} thread(s), {who}: {what}" for who, what in result["errors"].items()]
    if errors:
        print("\nFailed to build:\n" + "\n".join(errors))
    if args.markdown:
        with args.markdown.open("a") as out:
            out.write("\n" + HEADER + "\n" + "\n".join(rows) + "\n" + ("\n" + "\n".join(errors) + "\n" if errors else ""))


if __name__ == "__main__":
    main()
