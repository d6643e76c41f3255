"""Property-based tests of every conv and pooling argument (issue 9, "keep it found").

Hypothesis draws the arguments of the conv and pooling ops. Ordinary configurations (small
sizes, empty batches, non-contiguous and read-only inputs) run in this process against the NumPy
references of ``kernel_reference.py`` and PyTorch, forward and gradients. Hostile ones (integers
near and past int64, None, floats, bools, zero sizes) could crash a process if a check were
missing, so they run in a subprocess: a segfault or a hang there fails the test instead of
killing pytest. Each must either compute PyTorch's result or raise a TypeError/ValueError that
names the op; which of the two is decided here, in plain Python, from the documented rules.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import numdiff
from tests.kernels import kernel_reference as ref

F = numdiff.nn.functional
TF = torch.nn.functional
ROOT = Path(__file__).resolve().parents[2]
LIMIT = 2**31 - 1  # the documented bound on every geometry integer (numdiff._ground.args)


def _layout(x: np.ndarray, layout: str) -> np.ndarray:
    """The same values as a C-contiguous, a non-contiguous (last two axes swapped in memory) or
    a read-only array."""
    if layout == "non-contiguous":
        return np.ascontiguousarray(x.swapaxes(-1, -2)).swapaxes(-1, -2)
    x = x.copy()
    if layout == "read-only":
        x.flags.writeable = False
    return x


def _compare(ours, theirs, ours_inputs, torch_inputs, reference=None):
    """Forward against torch (and the NumPy reference), then the gradients of sum(out * g)."""
    out, tout = ours(*ours_inputs), theirs(*torch_inputs)
    values, tvalues = (out[0], tout[0]) if isinstance(out, tuple) else (out, tout)
    assert tuple(values.shape) == tuple(tvalues.shape)
    np.testing.assert_allclose(values.detach().numpy(), tvalues.detach().numpy(), rtol=1e-10, atol=1e-10)
    if isinstance(out, tuple):  # max pooling's indices
        np.testing.assert_array_equal(out[1].numpy(), tout[1].numpy())
    if reference is not None:
        np.testing.assert_allclose(values.detach().numpy(), reference, rtol=1e-10, atol=1e-10)
    g = np.random.default_rng(0).standard_normal(tuple(values.shape))
    (values * numdiff.tensor(g)).sum().backward()
    (tvalues * torch.tensor(g)).sum().backward()
    for a, b in zip(ours_inputs, torch_inputs):
        if isinstance(b, torch.Tensor) and b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-9)


def _leaf(x: np.ndarray):
    return numdiff.from_numpy(x).requires_grad_(), torch.tensor(np.array(x), requires_grad=True)


# ----------------------------------------------------------------------------- in-process


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_conv_ops_match_reference_and_torch(data):
    op = data.draw(st.sampled_from(["conv1d", "conv2d", "conv_transpose2d"]), label="op")
    dims = 1 if op == "conv1d" else 2
    ints = st.integers
    n, groups = data.draw(ints(0, 2), label="batch"), data.draw(ints(1, 2), label="groups")
    c_in, c_out = groups * data.draw(ints(1, 2)), groups * data.draw(ints(1, 2))
    size = data.draw(st.tuples(*[ints(1, 6)] * dims), label="size")
    kernel = data.draw(st.tuples(*[ints(1, 3)] * dims), label="kernel")
    stride = data.draw(st.tuples(*[ints(1, 3)] * dims), label="stride")
    dilation = data.draw(st.tuples(*[ints(1, 2)] * dims), label="dilation")
    padding = data.draw(st.tuples(*[ints(0, 2)] * dims), label="padding")
    layout = data.draw(st.sampled_from(["contiguous", "non-contiguous", "read-only"]), label="layout")
    rng = np.random.default_rng(1)
    if op == "conv_transpose2d":
        extra = tuple(data.draw(ints(0, max(s, d) - 1)) for s, d in zip(stride, dilation))
        out_size = [(i - 1) * s - 2 * p + d * (k - 1) + e + 1 for i, s, p, d, k, e in
                    zip(size, stride, padding, dilation, kernel, extra)]  # fmt: skip
        assume(min(out_size) >= 1)
        x = _layout(rng.standard_normal((n, c_in) + size), layout)
        w = rng.standard_normal((c_in, c_out // groups) + kernel)
        options = dict(stride=stride, padding=padding, output_padding=extra, groups=groups, dilation=dilation)
    else:
        assume(all(s + 2 * p >= d * (k - 1) + 1 for s, p, d, k in zip(size, padding, dilation, kernel)))
        x = _layout(rng.standard_normal((n, c_in) + size), layout)
        w = rng.standard_normal((c_out, c_in // groups) + kernel)
        options = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    reference = None
    if op == "conv2d":
        sides = tuple(p for p in padding for _ in range(2))
        reference = ref.conv2d(x, w, None, stride, sides, dilation, groups)
    (xo, xt), (wo, wt) = _leaf(x), _leaf(w)
    _compare(
        lambda a, b: getattr(F, op)(a, b, **options), lambda a, b: getattr(TF, op)(a, b, **options),
        (xo, wo), (xt, wt), reference,
    )  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_pool_ops_match_reference_and_torch(data):
    op = data.draw(
        st.sampled_from(["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool2d",
                         "adaptive_max_pool2d"]), label="op")  # fmt: skip
    dims = 1 if op.endswith("1d") else 2
    ints = st.integers
    n, c = data.draw(ints(0, 2), label="batch"), data.draw(ints(1, 2), label="channels")
    size = data.draw(st.tuples(*[ints(1, 7)] * dims), label="size")
    layout = data.draw(st.sampled_from(["contiguous", "non-contiguous", "read-only"]), label="layout")
    x = _layout(np.random.default_rng(2).standard_normal((n, c) + size), layout)
    reference = None
    if op.startswith("adaptive"):
        out_size = data.draw(st.tuples(*[ints(1, 8)] * dims), label="output_size")
        args, options = (out_size,), {}
        if op == "adaptive_avg_pool2d":
            reference = ref.adaptive_avg_pool2d(x, out_size)
        else:
            options = dict(return_indices=True)
    else:
        kernel = data.draw(st.tuples(*[ints(1, 4)] * dims), label="kernel")
        stride = data.draw(st.tuples(*[ints(1, 3)] * dims), label="stride")
        padding = tuple(data.draw(ints(0, k // 2)) for k in kernel)
        ceil_mode = data.draw(st.booleans(), label="ceil_mode")
        args = (kernel, stride, padding)
        if op.startswith("max"):
            dilation = data.draw(st.tuples(*[ints(1, 2)] * dims), label="dilation")
            options = dict(dilation=dilation, ceil_mode=ceil_mode, return_indices=True)
        else:
            dilation = (1,) * dims
            options = dict(ceil_mode=ceil_mode, count_include_pad=data.draw(st.booleans()))
            if op == "avg_pool2d":
                options["divisor_override"] = data.draw(st.one_of(st.none(), ints(1, 5)))
        assume(all(ref.pool_out(s, k, st_, p, d, ceil_mode) >= 1
                   for s, k, st_, p, d in zip(size, kernel, stride, padding, dilation)))  # fmt: skip
        if op.startswith("max"):
            # A window wholly in padding gives -inf and an index past its plane; PyTorch's CPU
            # backward scatters that output's gradient into the next plane's memory, numdiff
            # gives it none (the edge-case tests pin the forward of that case on its own).
            assume(all(any(0 <= o * st_ - p + t * d < s for t in range(k))
                       for s, k, st_, p, d in zip(size, kernel, stride, padding, dilation)
                       for o in range(ref.pool_out(s, k, st_, p, d, ceil_mode))))  # fmt: skip
        if op == "avg_pool2d":
            reference = ref.avg_pool2d(
                x, kernel, stride, padding, ceil_mode, options["count_include_pad"], options["divisor_override"]
            )
    xo, xt = _leaf(x)
    _compare(
        lambda a: getattr(F, op)(a, *args, **options), lambda a: getattr(TF, op)(a, *args, **options),
        (xo,), (xt,), reference,
    )  # fmt: skip


# ----------------------------------------------------------------------------- in a subprocess

HOSTILE_INTS = [0, -1, -(2**31), LIMIT, LIMIT + 1, 2**40, 2**62 - 1, 2**62, 3 * 2**61, 2**63 - 1, 2**63, 2**64]
OTHER = [None, 1.5, True, "2", (2, None)]


def _parse(value, dims, lo):
    """An argument under the documented rules: an int or `dims` ints (a 1-sequence repeated),
    each in [lo, LIMIT]. Returns the ints, or the name of the error."""
    if type(value) is int:
        values = (value,) * dims
    elif isinstance(value, (tuple, list)):
        values = tuple(value) * dims if len(value) == 1 else tuple(value)
    else:
        return "TypeError"
    if any(type(v) is not int for v in values):
        return "TypeError"
    if len(values) != dims or any(v < lo or v > LIMIT for v in values):
        return "ValueError"
    return values


def expected_outcome(case) -> tuple:
    """("TypeError" | "ValueError" | "ok", output shape), decided from the rules alone, checking
    the arguments in the order the ops do."""
    op, x = case["op"], case["x"]
    dims = len(x) - 2
    if op.startswith("conv"):
        kernel = case["w"][2:]
        if 0 in kernel:
            return ("ValueError", None)
        if op != "conv_transpose2d" and isinstance(case["padding"], str):
            order = ("stride", "dilation")
        else:
            order = ("stride", "dilation", "padding")
    elif op.startswith("adaptive"):
        order = ("output_size",)
    else:
        order = ("kernel_size", "stride", "padding") + (("dilation",) if "dilation" in case else ())
    parsed = {}
    for name in order:
        value = case[name]
        if name == "stride" and value is None and "kernel_size" in parsed:
            value = parsed["kernel_size"]  # pooling's default stride
        if name == "output_size":  # None keeps an input size; no 1-sequence repeat
            value = x[2:] if value is None else value
            if isinstance(value, (tuple, list)) and len(value) == dims:
                value = [size if v is None else v for v, size in zip(value, x[2:])]
            elif isinstance(value, (tuple, list)):
                return ("TypeError" if any(type(v) is not int for v in value) else "ValueError", None)
        parsed[name] = _parse(value, dims, 0 if name == "padding" else 1)
        if isinstance(parsed[name], str):
            return (parsed[name], None)
    if op.startswith("conv") and "padding" not in parsed:
        return ("ValueError", None)  # a string padding other than "same"/"valid"
    if op.startswith("adaptive"):
        out = list(parsed["output_size"])
    elif op.startswith("conv"):
        s, p, d = parsed["stride"], parsed["padding"], parsed["dilation"]
        if op == "conv_transpose2d":
            out = [(i - 1) * s_ - 2 * p_ + d_ * (k - 1) + 1 for i, s_, p_, d_, k in zip(x[2:], s, p, d, kernel)]
        else:
            out = [(i + 2 * p_ - d_ * (k - 1) - 1) // s_ + 1 for i, s_, p_, d_, k in zip(x[2:], s, p, d, kernel)]
    else:
        k, s, p = parsed["kernel_size"], parsed["stride"], parsed["padding"]
        d = parsed.get("dilation", (1,) * dims)
        if any(p_ > k_ // 2 for p_, k_ in zip(p, k)):
            return ("ValueError", None)
        out = [ref.pool_out(i, k_, s_, p_, d_, False) for i, k_, s_, p_, d_ in zip(x[2:], k, s, p, d)]
    if min(out) < 1:
        return ("ValueError", None)
    shape = (x[0], 1) + tuple(out)
    return ("ValueError", None) if math.prod(max(v, 1) for v in shape) > 2**36 else ("ok", shape)


def _small(case) -> bool:
    """False for a valid case whose output is too large to allocate in a test (a user may ask
    for one; the test does not)."""
    kind, shape = expected_outcome(case)
    return kind != "ok" or math.prod(shape) <= 10**5


def _hostile(lo: int, hi: int):
    """A plain value in [lo, hi] most of the time, else a hostile integer or a non-integer."""
    return st.one_of(st.integers(lo, hi), st.sampled_from(HOSTILE_INTS), st.sampled_from(OTHER))


def _argument(lo: int, hi: int, dims: int):
    return st.one_of(_hostile(lo, hi), st.tuples(*[_hostile(lo, hi)] * dims))


@st.composite
def hostile_case(draw):
    op = draw(st.sampled_from(["conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "max_pool1d", "avg_pool2d",
                               "adaptive_avg_pool2d"]))  # fmt: skip
    dims = 1 if op.endswith("1d") else 2
    batch = draw(st.sampled_from([0, 1]))
    size = [draw(st.integers(1, 5)) for _ in range(dims)]
    case = {"op": op, "x": [batch, 1] + size}
    if op.startswith("conv"):
        case["w"] = [1, 1] + [draw(st.integers(0, 3)) for _ in range(dims)]
        for name, lo in (("stride", 1), ("padding", 0), ("dilation", 1)):
            case[name] = draw(_argument(lo, 3, dims))
        if op == "conv_transpose2d":
            case["padding"] = draw(_argument(0, 1, dims))
    elif op.startswith("adaptive"):
        case["output_size"] = draw(_argument(1, 4, dims))
    else:
        for name, lo in (("kernel_size", 1), ("stride", 1), ("padding", 0)):
            case[name] = draw(_argument(lo, 3, dims))
        if op.startswith("max"):
            case["dilation"] = draw(_argument(1, 3, dims))
    return case


RUNNER = r"""
import json, sys
import numpy as np
import numdiff
F = numdiff.nn.functional
results = []
for case in json.loads(sys.stdin.read()):
    args = {k: (tuple(v) if isinstance(v, list) else v) for k, v in case.items() if k not in ("op", "x", "w")}
    x = numdiff.ones(*case["x"], dtype=numdiff.float64)
    try:
        if "w" in case:
            out = getattr(F, case["op"])(x, numdiff.ones(*case["w"], dtype=numdiff.float64), **args)
        else:
            out = getattr(F, case["op"])(x, **args)
        results.append(["ok", list(out.shape), float(out.sum())])
    except (TypeError, ValueError) as error:
        results.append([type(error).__name__, str(error), None])
print(json.dumps(results))
"""


def _run_isolated(cases: list) -> list:
    """Run the cases in a fresh interpreter of this checkout; a crash or hang fails the test."""
    done = subprocess.run(
        [sys.executable, "-c", RUNNER], input=json.dumps(cases), capture_output=True, text=True,
        cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, f"the subprocess died (exit {done.returncode}):\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def _torch_sum(case) -> float | None:
    """PyTorch's sum of the output for a case numdiff computes, where torch takes the arguments."""
    args = {k: (tuple(v) if isinstance(v, list) else v) for k, v in case.items() if k not in ("op", "x", "w")}
    x = torch.ones(*case["x"], dtype=torch.float64)
    try:
        if "w" in case:
            return float(getattr(TF, case["op"])(x, torch.ones(*case["w"], dtype=torch.float64), **args).sum())
        return float(getattr(TF, case["op"])(x, **args).sum())
    except (RuntimeError, TypeError, ValueError, OverflowError):
        return None  # torch refuses some (int32 pooling arguments); the rules above still apply


def _jsonable(case):
    return json.loads(json.dumps(case))


# No shrinking: each example is a subprocess, and the failing case is named in the message anyway.
@settings(max_examples=3, deadline=None, phases=[Phase.generate], suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(hostile_case().filter(_small), min_size=40, max_size=40))
def test_hostile_arguments_are_refused_by_name_or_match_torch_in_a_subprocess(cases):
    cases = [_jsonable(c) for c in cases]
    results = _run_isolated(cases)
    for case, (kind, detail, total) in zip(cases, results):
        expected, shape = expected_outcome(case)
        assert kind == expected, f"{case}: expected {expected}, got {kind}: {detail}"
        if kind == "ok":
            assert tuple(detail) == shape, case
            want = _torch_sum(case)
            if want is not None:
                assert total == pytest.approx(want, rel=1e-12), case
        else:
            assert detail.startswith(case["op"] + ":"), f"{case}: message does not name the op: {detail}"


ISSUE_CASES = [
    # Issue 9 item 1: these crashed the process or wrapped around to a wrong number.
    {"op": "conv2d", "x": [1, 1, 5, 5], "w": [1, 1, 3, 3], "padding": [0, 3 * 2**61], "stride": [1, 2**62]},
    {"op": "conv2d", "x": [1, 1, 5, 5], "w": [1, 1, 3, 3], "padding": [0, 2**63 - 1], "stride": [1, 2**63 - 1]},
    {"op": "conv1d", "x": [1, 1, 5], "w": [1, 1, 3], "padding": 3 * 2**61, "stride": 2**62},
    {"op": "max_pool2d", "x": [1, 1, 4, 4], "kernel_size": 2, "stride": 2**40},
]


def test_issue_cases_that_crashed_are_refused_by_name_in_a_subprocess():
    for case, (kind, detail, _) in zip(ISSUE_CASES, _run_isolated(ISSUE_CASES)):
        assert kind == "ValueError" and "must be at most 2147483647" in detail, (case, detail)
