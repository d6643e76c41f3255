"""bench_cpu.py's report: the Markdown table rows (printed as each workload finishes) and the
whole write-up with the run's machine, versions, load average and geometric means."""

from __future__ import annotations

import datetime
import statistics


def fmt(value, spec):
    """`value` formatted, or "-" where there is none (a workload without a flop count)."""
    return "-" if value is None else format(value, spec)


def row(r: dict) -> str:
    """One workload's table row (with the busy columns when it was timed beside a spinner)."""
    line = (
        f"| {r['name']} | {r['torch_ms']:.2f} | {r['ours_ms']:.2f} | {r['ratio']:.2f} | {fmt(r['gflops'], '.1f')} "
        f"| {fmt(r['peak_pct'], '.1f')} | {r['torch_min_ms']:.2f} / {r['ours_min_ms']:.2f} | {r['first_s']:.2f} |"
    )
    if "busy_ratio" in r:
        line += f" {r['torch_slowdown']:.2f} | {r['ours_slowdown']:.2f} | {r['busy_ratio']:.2f} |"
    return line


BUSY_HEADER = (
    " busy: PyTorch slowdown | busy: numdiff slowdown | busy: ratio |",
    "---:|---:|---:|",
)


HEADER = (
    "| workload | PyTorch ms | numdiff ms | ratio | numdiff GFLOP/s | % of fp32 peak | min ms (PyTorch / numdiff) "
    "| numdiff first call s |\n|---|---:|---:|---:|---:|---:|---:|---:|"
)


def header(busy: bool) -> str:
    if not busy:
        return HEADER
    top, rule = HEADER.split("\n")
    return top + BUSY_HEADER[0] + "\n" + rule + BUSY_HEADER[1]


def markdown(rows: list[dict], info: dict) -> str:
    busy = any("busy_ratio" in r for r in rows)
    lines = [
        f"Date: {datetime.date.today().isoformat()}. Machine: {info['model']}, {info['threads']} threads, "
        f"clock {info['clock']:.3f} GHz (/proc/cpuinfo 'cpu MHz').",
        f"PyTorch {info['torch']}, Numba {info['numba']} (threading layer {info['threading_layer']}); "
        f"{info['blas']}. Median of {info['repeat']} alternating rounds (each about 20 ms of calls, at least one), "
        "per call"
        + (
            ", timed in thread CPU time (time.thread_time)." if info["cpu_time"] else ", wall clock."
        ),
        "Both libraries in this one process (--same-process)." if info["same_process"] else
        "Each library ran in its own process (benchmarks/_isolated.py), so their thread pools never share one.",
        f"Nominal fp32 peak = {info['threads']} cores x 2 FMA x 16 lanes x 2 flops x {info['clock']:.3f} GHz "
        f"= {info['peak']:.0f} GFLOP/s.",
        f"numdiff.kernels.compile_all(float32): {info['compile_seconds']:.2f} s (compile, or disk-cache load); "
        "the last column is each workload's first call after that.",
        "Load average at the end of the run (1/5/15 min, machine shared with other jobs): "
        + " / ".join(f"{v:.1f}" for v in info["load"])
        + ".",
        *(
            ["Busy columns: each library's median beside one spinning process over its median alone, "
             "and numdiff/PyTorch beside it."]
            if busy else []
        ),
        "",
        header(busy),
    ]  # fmt: skip
    lines += [row(r) for r in rows]
    geomean = statistics.geometric_mean([r["ratio"] for r in rows])
    lines += ["", f"Geometric mean of the ratios: {geomean:.2f}."]
    if busy:
        ours = statistics.geometric_mean([r["ours_slowdown"] for r in rows])
        theirs = statistics.geometric_mean([r["torch_slowdown"] for r in rows])
        lines.append(f"Geometric mean slowdown beside the busy process: PyTorch {theirs:.2f}, numdiff {ours:.2f}.")
    return "\n".join(lines) + "\n"
