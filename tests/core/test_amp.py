"""numdiff.autocast and GradScaler against torch's on the CPU: which ops run in bfloat16 and
which in float32, the values, float32 gradients for float32 weights, nesting, and the scaler's
scale over steps with and without inf gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
import numdiff.nn as nn


def _pair(seed=0):
    rng = np.random.default_rng(seed)
    weight, bias, x = rng.standard_normal((3, 5)), rng.standard_normal(3), rng.standard_normal((4, 5))
    ours = nn.Linear(5, 3)
    theirs = torch.nn.Linear(5, 3)
    with numdiff.no_grad(), torch.no_grad():
        ours.weight.copy_(numdiff.tensor(weight, dtype=numdiff.float32))
        ours.bias.copy_(numdiff.tensor(bias, dtype=numdiff.float32))
        theirs.weight.copy_(torch.tensor(weight))
        theirs.bias.copy_(torch.tensor(bias))
    return ours, theirs, x.astype(np.float32)


def test_linear_and_matmul_run_in_bfloat16_and_losses_in_float32_as_torch():
    ours, theirs, x = _pair()
    target = [0, 2, 1, 1]
    with numdiff.autocast("cpu"):
        mine = ours(numdiff.tensor(x))
        product = numdiff.tensor(x) @ numdiff.tensor(x).t()
        my_loss = nn.functional.cross_entropy(mine, numdiff.tensor(target))
    with torch.autocast("cpu"):
        their = theirs(torch.tensor(x))
        their_product = torch.tensor(x) @ torch.tensor(x).t()
        their_loss = torch.nn.functional.cross_entropy(their, torch.tensor(target))
    for a, b in ((mine, their), (product, their_product), (my_loss, their_loss)):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_allclose(a.detach().float().numpy(), b.detach().float().numpy(), rtol=2e-2, atol=2e-2)
    my_loss.backward()
    their_loss.backward()
    assert ours.weight.grad.dtype == numdiff.float32
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=5e-2, atol=5e-2)


def test_float64_is_not_cast_and_nesting_and_the_decorator_work():
    x = numdiff.randn(2, 2, dtype=numdiff.float64)
    with numdiff.autocast("cpu"):
        assert (x @ x).dtype == numdiff.float64
        assert numdiff.is_autocast_enabled("cpu") and numdiff.get_autocast_dtype("cpu") == numdiff.bfloat16
        with numdiff.autocast("cpu", enabled=False):
            assert (x.float() @ x.float()).dtype == numdiff.float32
            assert not numdiff.is_autocast_enabled("cpu")
        assert (x.float() @ x.float()).dtype == numdiff.bfloat16
    assert not numdiff.is_autocast_enabled("cpu")
    assert (x.float() @ x.float()).dtype == numdiff.float32

    @numdiff.autocast("cpu", dtype=numdiff.float16)
    def product(a):
        return a @ a

    assert product(x.float()).dtype == numdiff.float16
    with numdiff.cuda.amp.autocast():  # CUDA autocast leaves CPU tensors alone, as in PyTorch
        assert (x.float() @ x.float()).dtype == numdiff.float32


def test_autocast_refuses_bad_arguments_by_name():
    with pytest.raises(ValueError, match="autocast: device_type"):
        numdiff.autocast("tpu")
    with pytest.raises(ValueError, match="autocast: dtype"):
        numdiff.autocast("cpu", dtype=numdiff.int32)


def test_grad_scaler_follows_torchs_scale_and_skips_steps_with_inf():
    ours, theirs, x = _pair(1)
    my_scaler = numdiff.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    their_scaler = torch.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    my_opt = numdiff.optim.SGD(ours.parameters(), lr=0.1)
    their_opt = torch.optim.SGD(theirs.parameters(), lr=0.1)
    for step in range(5):
        my_opt.zero_grad()
        their_opt.zero_grad()
        my_scaler.scale(ours(numdiff.tensor(x)).pow(2).sum()).backward()
        their_scaler.scale(theirs(torch.tensor(x)).pow(2).sum()).backward()
        if step == 2:  # an overflow: the step is skipped and the scale backs off
            ours.weight.grad.fill_(float("inf"))
            theirs.weight.grad.fill_(float("inf"))
        my_scaler.step(my_opt)
        their_scaler.step(their_opt)
        my_scaler.update()
        their_scaler.update()
        assert my_scaler.get_scale() == their_scaler.get_scale()
        np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-4, atol=1e-5)
    restored = numdiff.amp.GradScaler("cpu")
    restored.load_state_dict(my_scaler.state_dict())
    assert restored.get_scale() == my_scaler.get_scale()
    with pytest.raises(RuntimeError, match="unscale_: already called"):
        my_scaler.unscale_(my_opt)
        my_scaler.unscale_(my_opt)
    disabled = numdiff.amp.GradScaler(enabled=False)
    loss = numdiff.ones(1)
    assert disabled.scale(loss) is loss and disabled.get_scale() == 1.0


def test_the_settings_key_compile_reads_is_kept_up_to_date_not_built_per_call():
    from numdiff import amp

    off = amp.state_key()
    assert off == () and amp.state_key() is off  # a compiled call reads it: no tuple built, no sort
    with numdiff.autocast("cpu"):
        on = amp.state_key()
        assert on == (("cpu", "bfloat16"),) and amp.state_key() is on
        with numdiff.autocast("cpu", dtype=numdiff.float16):
            assert amp.state_key() == (("cpu", "float16"),)
        with numdiff.autocast("cpu", enabled=False):
            assert amp.state_key() == ()  # a dtype set where autocast is off casts nothing
        assert amp.state_key() == on
    assert amp.state_key() == ()


def test_a_compiled_function_keeps_one_trace_per_autocast_setting():
    f = numdiff.compile(lambda x: (x @ x).sum())
    x = numdiff.randn(4, 4)
    eager = (x @ x).sum()
    with numdiff.autocast("cpu"):
        lowered = f(x)
    plain = f(x)
    assert f.compiled.compile_count == 2 and plain.dtype == numdiff.float32
    assert numdiff.allclose(plain, eager) and lowered.dtype == numdiff.float32
    f(x)
    assert f.compiled.compile_count == 2
