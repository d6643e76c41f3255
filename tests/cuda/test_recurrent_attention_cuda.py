"""LSTM, GRU (also on a PackedSequence), MultiheadAttention and TransformerEncoderLayer on
device="cuda": the same weights on the CPU and on CUDA give the same output, input gradient and
parameter gradients (float64, 1e-10).
They are composed from ops whose CUDA kernels are pinned elsewhere; this checks the composition
(chunk, stack, masks, the per-step loop) stays on the device. Tiny shapes for the simulator."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn

if not numdiff.cuda.is_available():
    pytest.skip("CUDA is not available; run `python3 -m pytest tests/cuda` to use the simulator", allow_module_level=True)

LAYERS = [
    ("LSTM", lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True), (2, 2, 3)),
    ("GRU", lambda: nn.GRU(3, 4, batch_first=True), (2, 2, 3)),
    ("MultiheadAttention", lambda: nn.MultiheadAttention(4, 2), (3, 2, 4)),
    ("TransformerEncoderLayer", lambda: nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0), (3, 2, 4)),
]


@pytest.mark.parametrize("name, build, shape", LAYERS, ids=[layer[0] for layer in LAYERS])
def test_layer_on_cuda_matches_the_cpu(name, build, shape):
    rng = np.random.default_rng(0)
    cpu = build().double()
    gpu = build().double()
    gpu.load_state_dict(cpu.state_dict())
    gpu.cuda()
    x = rng.standard_normal(shape)
    x_cpu = numdiff.tensor(x, requires_grad=True)
    x_gpu = numdiff.tensor(x, device="cuda", requires_grad=True)
    attention = name == "MultiheadAttention"
    out_cpu = cpu(*(x_cpu,) * (3 if attention else 1))
    out_gpu = gpu(*(x_gpu,) * (3 if attention else 1))
    out_cpu = out_cpu[0] if isinstance(out_cpu, tuple) else out_cpu
    out_gpu = out_gpu[0] if isinstance(out_gpu, tuple) else out_gpu
    assert out_gpu.device.type == "cuda"
    seed = rng.standard_normal(shape[:-1] + (out_cpu.shape[-1],))
    (out_cpu * numdiff.tensor(seed)).sum().backward()
    (out_gpu * numdiff.tensor(seed, device="cuda")).sum().backward()
    np.testing.assert_allclose(out_gpu.detach().cpu().numpy(), out_cpu.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x_gpu.grad.cpu().numpy(), x_cpu.grad.numpy(), rtol=1e-10, atol=1e-12)
    for (param_name, p_gpu), p_cpu in zip(gpu.named_parameters(), cpu.parameters()):
        assert p_gpu.grad.device.type == "cuda", param_name
        np.testing.assert_allclose(p_gpu.grad.cpu().numpy(), p_cpu.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=param_name)


def test_packed_sequence_on_cuda_matches_the_cpu():
    from numdiff.nn.utils import rnn as packing

    rng = np.random.default_rng(1)
    cpu = nn.GRU(3, 4, bidirectional=True).double()
    gpu = nn.GRU(3, 4, bidirectional=True).double()
    gpu.load_state_dict(cpu.state_dict())
    gpu.cuda()
    x = rng.standard_normal((3, 2, 3))
    x_cpu = numdiff.tensor(x, requires_grad=True)
    x_gpu = numdiff.tensor(x, device="cuda", requires_grad=True)
    out_cpu, h_cpu = cpu(packing.pack_padded_sequence(x_cpu, [1, 3], enforce_sorted=False))
    out_gpu, h_gpu = gpu(packing.pack_padded_sequence(x_gpu, [1, 3], enforce_sorted=False))
    padded_cpu, _ = packing.pad_packed_sequence(out_cpu)
    padded_gpu, _ = packing.pad_packed_sequence(out_gpu)
    assert padded_gpu.device.type == "cuda" and h_gpu.device.type == "cuda"
    (padded_cpu.sum() + h_cpu.sum()).backward()
    (padded_gpu.sum() + h_gpu.sum()).backward()
    np.testing.assert_allclose(padded_gpu.detach().cpu().numpy(), padded_cpu.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h_gpu.detach().cpu().numpy(), h_cpu.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x_gpu.grad.cpu().numpy(), x_cpu.grad.numpy(), rtol=1e-10, atol=1e-12)
