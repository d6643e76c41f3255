"""The fused optimizer kernels: argument checks before compiled code, and CPU/CUDA agreement."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from numdiff.kernels import optim as kernels
from numdiff.kernels import optim_steps

ADAM = {
    "step": 1, "lr": 0.1, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0,
    "decoupled_weight_decay": False, "amsgrad": False, "maximize": False,
}  # fmt: skip


def _arrays(n: int = 4, dtype=np.float32, count: int = 4):
    return [np.ones(n, dtype) for _ in range(count)]


def test_mismatched_lengths_are_refused_and_nothing_is_written():
    p, g, m, v = _arrays()
    with pytest.raises(ValueError, match="adam_step: exp_avg_sq has 3 elements but param has 4"):
        optim_steps.adam_step(p, g, m, v[:3], np.empty(0, np.float32), **ADAM)
    np.testing.assert_array_equal(p, 1.0)


def test_mixed_dtypes_are_refused_naming_both():
    p, g, m, v = _arrays()
    with pytest.raises(TypeError, match="grad has dtype float64 but param has dtype float32"):
        optim_steps.adam_step(p, g.astype(np.float64), m, v, np.empty(0, np.float32), **ADAM)


def test_integer_params_non_flat_and_strided_arrays_are_refused():
    p, g, m, v = _arrays()
    empty = np.empty(0, np.float32)
    with pytest.raises(TypeError, match="param must be float32 or float64, got int64"):
        optim_steps.adagrad_step(np.ones(4, np.int64), g, m, step=1, lr=0.1, lr_decay=0, eps=1e-10,
                             weight_decay=0, maximize=False)  # fmt: skip
    with pytest.raises(ValueError, match=r"must be a flat \(1-D\) array, got shape \(2, 2\)"):
        optim_steps.adam_step(p.reshape(2, 2), g, m, v, empty, **ADAM)
    with pytest.raises(ValueError, match="exp_avg must be contiguous"):
        optim_steps.adam_step(p[:2], g[:2], np.ones(4, np.float32)[::2], v[:2], empty, **ADAM)


def test_a_buffer_that_an_option_needs_must_be_full_and_an_unused_one_empty():
    p, g, m, v = _arrays()
    empty = np.empty(0, np.float32)
    with pytest.raises(ValueError, match="max_exp_avg_sq has 0 elements but param has 4"):
        optim_steps.adam_step(p, g, m, v, empty, **{**ADAM, "amsgrad": True})
    with pytest.raises(
        ValueError, match="momentum_buffer has 4 elements but the options in use need no such"
    ):
        optim_steps.sgd_step(p, g, m, lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                         maximize=False, first_step=False)  # fmt: skip


def test_step_counts_from_one():
    p, g, m, v = _arrays()
    with pytest.raises(ValueError, match="step counts from 1, got 0"):
        optim_steps.adam_step(p, g, m, v, np.empty(0, np.float32), **{**ADAM, "step": 0})


def test_sgd_momentum_first_step_copies_then_averages():
    p, g, buf = np.zeros(2), np.array([1.0, -2.0]), np.zeros(2)
    options = {
        "lr": 1.0,
        "momentum": 0.5,
        "dampening": 0.5,
        "weight_decay": 0.0,
        "nesterov": False,
        "maximize": False,
    }
    optim_steps.sgd_step(p, g, buf, first_step=True, **options)
    np.testing.assert_array_equal(buf, [1.0, -2.0])
    optim_steps.sgd_step(p, g, buf, first_step=False, **options)
    np.testing.assert_array_equal(buf, [1.0, -2.0])  # 0.5*buf + 0.5*g
    np.testing.assert_array_equal(p, [-2.0, 4.0])


def test_large_arrays_are_updated_everywhere_by_the_parallel_loop():
    n = 100_003
    p, g, s = np.zeros(n), np.arange(n, dtype=np.float64), np.zeros(n)
    optim_steps.adagrad_step(p, g, s, step=1, lr=1.0, lr_decay=0.0, eps=0.0, weight_decay=0.0, maximize=True)
    np.testing.assert_array_equal(s, g * g)
    np.testing.assert_array_equal(p[1:], 1.0)


CUDASIM_SCRIPT = r"""
import json
import numpy as np
import numdiff
from numdiff import optim

rng = np.random.default_rng(0)
init = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(5).astype(np.float32)]
cases = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.1, "amsgrad": True, "maximize": True}),
    ("AdamW", {"lr": 0.1}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1}),
]
out = {}
for name, kwargs in cases:
    cpu = [numdiff.tensor(a, requires_grad=True) for a in init]
    gpu = [numdiff.tensor(a, device="cuda", requires_grad=True) for a in init]
    cpu_opt, gpu_opt = getattr(optim, name)(cpu, **kwargs), getattr(optim, name)(gpu, **kwargs)
    for _ in range(3):
        for c, g in zip(cpu, gpu):
            grad = rng.standard_normal(c.shape).astype(np.float32)
            c.grad, g.grad = numdiff.tensor(grad), numdiff.tensor(grad, device="cuda")
        cpu_opt.step()
        gpu_opt.step()
    assert all(g.device.type == "cuda" and g.is_leaf for g in gpu)
    assert all(s.device.type == "cuda" for st in gpu_opt.state.values() for k, s in st.items() if k != "step")
    out[name] = max(float(np.abs(c.detach().numpy() - g.detach().cpu().numpy()).max()) for c, g in zip(cpu, gpu))
print(json.dumps(out))
"""


def test_optimizers_on_cuda_tensors_match_the_cpu_in_the_simulator():
    pytest.importorskip("numba.cuda")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run(
        [sys.executable, "-c", CUDASIM_SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    diffs = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(diffs) == {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad"}
    assert all(d <= 1e-6 for d in diffs.values()), diffs


@pytest.mark.parametrize("name", ["sgd", "adam", "rmsprop", "adagrad"])
def test_serial_and_parallel_builds_compute_the_same_update(name):
    rng = np.random.default_rng(0)
    n = 3000
    arity = {"sgd": 3, "adam": 5, "rmsprop": 5, "adagrad": 3}[name]
    arrays = [rng.random(n) + 0.5 for _ in range(arity)]
    h = {"sgd": (0.1, 0.9, 0.1, 0.01), "adam": (0.1, 0.9, 0.99, 1e-8, 0.1, 0.5, 0.3, 0.1, 0.01, 0.99),
         "rmsprop": (0.1, 0.9, 1e-8, 0.1, 0.5), "adagrad": (0.1, 1e-10, 0.1)}[name]  # fmt: skip
    f = {
        "sgd": (True, False, False),
        "adam": (True, True, False),
        "rmsprop": (False, True),
        "adagrad": (True,),
    }[name]
    serial, parallel = kernels.CPU_KERNELS[name]
    copies = [a.copy() for a in arrays]
    serial(*arrays, h, f)
    parallel(*copies, h, f)
    rng = np.random.default_rng(0)
    assert not np.array_equal(arrays[0], rng.random(n) + 0.5)  # the parameter really changed
    for a, b in zip(arrays, copies):
        np.testing.assert_array_equal(a, b)


def test_the_checked_steps_stay_importable_from_numdiff_kernels_optim():
    for name in optim_steps.__all__:
        assert getattr(kernels, name) is getattr(optim_steps, name), name
