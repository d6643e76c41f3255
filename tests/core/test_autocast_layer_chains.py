"""Under autocast, the second layer of a model gets the first layer's lower-precision output and
its own float32 weight: the argument checks of linear, matmul/mm/bmm, conv and the recurrent
layers let the mixed operands through to autocast's cast, as PyTorch's do (the CPU amp recipe
stopped on "linear: input is bfloat16 but weight is float32")."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff


def _mlp(lib):
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 3))
    with lib.no_grad():
        for k, p in enumerate(net.parameters()):
            p.copy_(lib.from_numpy(np.random.default_rng(k).standard_normal(tuple(p.shape)).astype(np.float32)))
    return net


def test_a_linear_chain_under_autocast_is_bfloat16_and_matches_torch():
    x = np.random.default_rng(9).standard_normal((5, 4)).astype(np.float32)
    outs = {}
    for lib in (numdiff, torch):
        net = _mlp(lib)
        with lib.autocast(device_type="cpu", dtype=lib.bfloat16):
            out = net(lib.from_numpy(x))
        assert str(out.dtype).endswith("bfloat16")
        out.float().sum().backward()
        assert net[0].weight.grad.dtype == lib.float32
        outs[lib.__name__] = out.float().detach().numpy()
    np.testing.assert_allclose(outs["numdiff"], outs["torch"], rtol=3e-2, atol=3e-2)


def test_products_and_convs_take_a_lowered_operand_with_a_float32_one():
    with numdiff.autocast(device_type="cpu", dtype=numdiff.bfloat16):
        low = numdiff.randn(2, 3).to(numdiff.bfloat16)
        full = numdiff.randn(3, 4)
        for out in (low @ full, numdiff.mm(low, full), numdiff.bmm(low[None], full[None]), numdiff.matmul(low, full)):
            assert out.dtype == numdiff.bfloat16 and tuple(out.shape[-2:]) == (2, 4)
        image = numdiff.nn.Conv2d(3, 4, 3)(numdiff.randn(1, 3, 8, 8))
        assert numdiff.nn.Conv2d(4, 2, 3)(image).dtype == numdiff.bfloat16


def test_recurrent_layers_run_in_float32_under_autocast():
    with numdiff.autocast(device_type="cpu", dtype=numdiff.bfloat16):
        lstm = numdiff.nn.LSTM(4, 5)
        out, _ = lstm(numdiff.randn(3, 2, 4))
        out2, _ = numdiff.nn.GRU(5, 5)(out.to(numdiff.bfloat16), numdiff.zeros(1, 2, 5))
    assert out.dtype == out2.dtype == numdiff.float32
    out2.sum().backward()
    assert lstm.weight_hh_l0.grad.dtype == numdiff.float32


def test_mixed_dtypes_outside_autocast_and_dot_inside_still_raise():
    with pytest.raises(TypeError, match="linear: input is numdiff.bfloat16 but weight is numdiff.float32"):
        numdiff.nn.functional.linear(numdiff.ones(2, 3, dtype=numdiff.bfloat16), numdiff.ones(4, 3))
    with pytest.raises(TypeError, match="mm: expected both operands to have the same dtype"):
        numdiff.mm(numdiff.ones(2, 2), numdiff.ones(2, 2, dtype=numdiff.float64))
    with numdiff.autocast(device_type="cpu"), pytest.raises(TypeError, match="dot: expected both operands"):
        numdiff.dot(numdiff.ones(2), numdiff.ones(2, dtype=numdiff.bfloat16))
    with pytest.raises(TypeError, match="conv2d: input, weight and bias must share one dtype"):
        numdiff.nn.functional.conv2d(numdiff.ones(1, 1, 3, 3), numdiff.ones(1, 1, 2, 2, dtype=numdiff.float64))
