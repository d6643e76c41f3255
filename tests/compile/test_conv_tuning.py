"""numdiff.compile times the plans the conv routing rules choose between and runs the fastest
(numdiff.compile.conv_tuning): every candidate computes the same convolution, the rules' plan
stays unless another is clearly faster and agrees with it, and a compiled program calls the core
that was chosen, with eager's numbers up to rounding."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import numdiff
from numdiff import nn
from numdiff.compile import conv_tuning
from numdiff.kernels._conv_plans import conv2d_plans

# (x shape, weight shape, stride, padding): shapes whose rules' plan has alternatives.
CONVS = {
    "3x3 16 channels": ((4, 16, 12, 12), (16, 16, 3, 3), 1, 1),
    "3x3 stride 2": ((4, 8, 12, 12), (16, 8, 3, 3), 2, 1),
    "1x1 stride 2": ((4, 8, 12, 12), (16, 8, 1, 1), 2, 0),
}
KINDS = ("forward", "backward_input", "backward_weight")


def _geometry(name):
    x_shape, w_shape, stride, pad = CONVS[name]
    size = (x_shape[2] + 2 * pad - w_shape[2]) // stride + 1
    out_shape = (x_shape[0], w_shape[0], size, size)
    return x_shape, w_shape, out_shape, (stride, stride), (pad,) * 4, (1, 1), 1


@pytest.fixture(autouse=True)
def _fresh_choices():
    conv_tuning._tuned.cache_clear()  # choices are kept per process: none from another test
    yield
    conv_tuning._tuned.cache_clear()


@pytest.mark.parametrize(("name", "kind"), itertools.product(sorted(CONVS), KINDS))
def test_every_candidate_plan_computes_the_rules_plans_convolution(name, kind):
    x_shape, w_shape, out_shape, stride, padding, dilation, groups = _geometry(name)
    plans = conv2d_plans(kind, x_shape, w_shape, out_shape, stride, padding, dilation, groups)
    assert plans[0] == numdiff.kernels.conv.conv2d_plan(kind, x_shape, w_shape, out_shape, stride, padding,
                                                         dilation, groups)  # fmt: skip
    # float32, the models' dtype, whose cores the rest of the suite builds too
    run = conv_tuning._runner(kind, x_shape, w_shape, out_shape, groups, np.dtype(np.float32))
    expected = run(plans[0]).astype(np.float64)
    for plan in plans[1:]:
        np.testing.assert_allclose(run(plan), expected, rtol=0, atol=1e-5 * np.abs(expected).max(),
                                   err_msg=plan[0].__name__)  # fmt: skip


def test_a_3x3_convolution_has_winograd_and_other_candidates_each_way():
    x_shape, w_shape, out_shape, stride, padding, dilation, groups = _geometry("3x3 16 channels")
    for kind in KINDS:
        cores = [core.__name__ for core, _ in conv2d_plans(kind, x_shape, w_shape, out_shape, stride, padding,
                                                               dilation, groups)]  # fmt: skip
        assert any("winograd" in core for core in cores) and len(set(cores)) >= 2, (kind, cores)


def _fake(results, durations):
    """run and clock for `fastest` over plans 0, 1, ...: each run of plan i returns results[i] and
    advances the clock by durations[i]."""
    now = [0.0]

    def run(plan):
        now[0] += durations[plan]
        return results[plan]

    return run, lambda: now[0]


def test_fastest_keeps_the_rules_plan_unless_another_takes_at_most_the_margin():
    same = np.ones(3)
    run, clock = _fake([same] * 3, [1.0, 0.97, 2.0])
    assert conv_tuning.fastest([0, 1, 2], run, clock) == 0  # 3% faster: within the margin
    run, clock = _fake([same] * 3, [1.0, 0.5, 0.7])
    assert conv_tuning.fastest([0, 1, 2], run, clock) == 1


def test_fastest_drops_a_candidate_whose_result_differs():
    run, clock = _fake([np.ones(3), np.ones(3) * 1.01, np.ones(3)], [1.0, 0.1, 0.6])
    assert conv_tuning.fastest([0, 1, 2], run, clock) == 2


@pytest.mark.parametrize("name", sorted(CONVS))
def test_a_compiled_step_calls_the_chosen_cores_and_matches_eager(monkeypatch, name):
    x_shape, w_shape, out_shape, stride, padding, dilation, groups = _geometry(name)
    for kind in KINDS:  # build every candidate, so that each is ready to be timed
        run = conv_tuning._runner(kind, x_shape, w_shape, out_shape, groups, np.dtype(np.float32))
        for plan in conv2d_plans(kind, x_shape, w_shape, out_shape, stride, padding, dilation, groups):
            run(plan)
    monkeypatch.setattr(conv_tuning, "TUNE_MIN_MACS", 0)
    chosen = []

    def last(plans, run, clock):  # never the rules' own plan
        chosen.append(plans[-1][0])
        return len(plans) - 1

    monkeypatch.setattr(conv_tuning, "fastest", last)
    numdiff.manual_seed(3)
    conv = nn.Conv2d(x_shape[1], w_shape[0], w_shape[2], stride[0], padding[0], bias=False)
    x = numdiff.tensor(np.random.default_rng(4).standard_normal(x_shape).astype(np.float32), requires_grad=True)

    def loss_of(x):
        return (conv(x) ** 2).sum()

    compiled = numdiff.compile(loss_of, mode="max-autotune")
    results = []
    for step in (compiled, loss_of):
        x.grad, conv.weight.grad = None, None
        loss = step(x)
        loss.backward()
        results.append((loss.item(), x.grad.numpy().copy(), conv.weight.grad.numpy().copy()))
    for got, expected in zip(results[0], results[1]):
        np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-4 * np.abs(expected).max())
    ((trace,),) = compiled.compiled.traces.values()
    called = list(trace.program.forward.__globals__.values())  # the program's module: its named refs
    assert chosen and all(any(core is ref for ref in called) for core in chosen), (chosen, name)


def test_the_default_mode_runs_the_rules_plans_untimed(monkeypatch):
    """Only mode="max-autotune" times candidates: by default a program runs eager's plans, the same
    cores in every process."""
    monkeypatch.setattr(conv_tuning, "TUNE_MIN_MACS", 0)
    monkeypatch.setattr(conv_tuning, "fastest", lambda plans, run, clock: pytest.fail("timed a conv"))
    conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)
    x = numdiff.randn(2, 3, 8, 8, requires_grad=True)
    for mode in (None, "default", "reduce-overhead"):
        numdiff.compile(lambda x: conv(x).sum(), mode=mode)(x).backward()
