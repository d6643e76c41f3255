"""LSTM, GRU, RNN (also on a PackedSequence), MultiheadAttention and TransformerEncoderLayer on
device="cuda": the same weights on the CPU and on CUDA give the same output, input gradient and
parameter gradients (float64, 1e-10).
The recurrent layers run the sequence kernels of numdiff.cuda.kernels.recurrent against the CPU's
numdiff.kernels.recurrent (a packed sequence runs step by step, composed from ops); attention is
composed from ops whose CUDA kernels are pinned elsewhere. Tiny shapes for the simulator."""

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
    ("GRU-bidirectional-no-bias", lambda: nn.GRU(3, 4, bias=False, bidirectional=True), (3, 2, 3)),
    ("RNN-tanh", lambda: nn.RNN(3, 4, num_layers=2), (3, 2, 3)),
    ("RNN-relu", lambda: nn.RNN(3, 4, nonlinearity="relu", bidirectional=True), (3, 2, 3)),
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


def test_sequence_kernels_match_the_cpu_kernels_in_float32():
    from numdiff.cuda.array import CudaArray
    from numdiff.cuda.kernels import recurrent as gpu
    from numdiff.kernels import recurrent as cpu

    rng = np.random.default_rng(2)
    steps, batch, hidden = 3, 2, 3
    cuda = numdiff.device("cuda")

    def up(a):
        return CudaArray.from_numpy(np.ascontiguousarray(a), cuda)

    def both(name, out_width, *arrays, relu=None):
        """One family's forward on both devices: (CPU output, CUDA output)."""
        extra = () if relu is None else (relu,)
        out = np.empty((steps, batch, out_width), np.float32)
        getattr(cpu, f"{name}_sequence_forward")(*arrays, out, *extra)
        out_gpu = CudaArray.empty(out.shape, np.float32, cuda)
        getattr(gpu, f"{name}_sequence_forward")(*map(up, arrays), out_gpu, *extra)
        return out, out_gpu

    f32 = np.float32
    p, h0, c0, w = (rng.standard_normal(s).astype(f32) for s in ((steps, batch, 4 * hidden), (batch, hidden), (batch, hidden), (4 * hidden, hidden)))
    out = np.empty((steps, batch, 5 * hidden), f32)  # the record; h_1 .. h_L and c_L go to hs
    hs = cpu.lstm_sequence_forward(p, h0, c0, w, out, np.empty((steps + 1, batch, hidden), f32))
    out_gpu = CudaArray.empty(out.shape, f32, cuda)
    hs_gpu = gpu.lstm_sequence_forward(up(p), up(h0), up(c0), up(w), out_gpu, CudaArray.empty(hs.shape, f32, cuda))
    np.testing.assert_allclose(out_gpu.to_host(), out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hs_gpu.to_host(), hs, rtol=1e-5, atol=1e-6)
    g = rng.standard_normal((steps + 1, batch, hidden)).astype(f32)  # d h_1 .. d h_L, d c_L
    size = (steps * 4 + 2) * batch * hidden  # [d gates | d h_0 | d c_0] (numdiff.kernels._recurrent_layout)
    res = cpu.lstm_sequence_backward(g, out, c0, w, np.empty(size, f32))
    res_gpu = gpu.lstm_sequence_backward(up(g), out_gpu, up(c0), up(w), CudaArray.empty((size,), f32, cuda))
    np.testing.assert_allclose(res_gpu.to_host(), res, rtol=1e-5, atol=1e-6)

    p, w, b = (rng.standard_normal(s).astype(f32) for s in ((steps, batch, 3 * hidden), (3 * hidden, hidden), (3 * hidden,)))
    out, out_gpu = both("gru", 5 * hidden, p, h0, w, b)
    np.testing.assert_allclose(out_gpu.to_host(), out, rtol=1e-5, atol=1e-6)
    g = rng.standard_normal((steps, batch, hidden)).astype(f32)  # d h_1 .. d h_L
    size = (steps * 6 + 1) * batch * hidden  # [d pre | d hidden | d h_0]
    res = cpu.gru_sequence_backward(g, out, h0, w, np.empty(size, f32))
    res_gpu = gpu.gru_sequence_backward(up(g), out_gpu, up(h0), up(w), CudaArray.empty((size,), f32, cuda))
    np.testing.assert_allclose(res_gpu.to_host(), res, rtol=1e-5, atol=1e-6)

    p, w = (rng.standard_normal(s).astype(f32) for s in ((steps, batch, hidden), (hidden, hidden)))
    for relu in (False, True):
        out, out_gpu = both("rnn", hidden, p, h0, w, relu=relu)
        np.testing.assert_allclose(out_gpu.to_host(), out, rtol=1e-5, atol=1e-6)
        g = rng.standard_normal(out.shape).astype(f32)
        res = cpu.rnn_sequence_backward(g, out, w, np.empty((steps + 1) * batch * hidden, f32), relu)
        res_gpu = gpu.rnn_sequence_backward(up(g), out_gpu, up(w), CudaArray.empty(res.shape, f32, cuda), relu)
        np.testing.assert_allclose(res_gpu.to_host(), res, rtol=1e-5, atol=1e-6)


def test_sequence_launcher_refuses_bad_shapes_and_host_arrays():
    from numdiff.cuda.array import CudaArray
    from numdiff.cuda.kernels import recurrent as gpu

    cuda = numdiff.device("cuda")
    z = lambda *s: CudaArray.empty(s, np.float64, cuda)  # noqa: E731
    with pytest.raises(ValueError, match=r"lstm_sequence_forward: h0 must have shape \(2, 3\), got \(2, 4\)"):
        gpu.lstm_sequence_forward(z(3, 2, 12), z(2, 4), z(2, 3), z(12, 3), z(3, 2, 15), z(4, 2, 3))
    with pytest.raises(TypeError, match="rnn_sequence_forward: h0 must be a CUDA array"):
        gpu.rnn_sequence_forward(z(3, 2, 3), np.zeros((2, 3)), z(3, 3), z(3, 2, 3), False)
    with pytest.raises(ValueError, match=r"lstm_sequence_backward: res must have shape \(84\), got \(3, 2, 15\)"):
        gpu.lstm_sequence_backward(z(4, 2, 3), z(3, 2, 15), z(2, 3), z(12, 3), z(3, 2, 15))


@pytest.mark.parametrize("causal, bias_heads", [(False, 0), (True, 1), (False, 2)])
def test_attention_kernels_match_the_cpu_kernels(causal, bias_heads):
    from numdiff.cuda.array import CudaArray
    from numdiff.cuda.kernels import attention as gpu
    from numdiff.kernels import attention as cpu

    rng = np.random.default_rng(3)
    cuda = numdiff.device("cuda")
    q, k, v = (rng.standard_normal(s) for s in ((2, 3, 2), (2, 4, 2), (2, 4, 3)))
    bias = rng.standard_normal((bias_heads, 3, 4)) if bias_heads else np.zeros((0, 0, 0))
    if bias_heads:
        bias[0, 1] = -np.inf  # a row that sees no key
    grad = rng.standard_normal((2, 3, 4))

    def up(a):
        return CudaArray.from_numpy(np.ascontiguousarray(a), cuda)

    out = cpu.attention_forward(q, k, v, bias, 0.7, causal, np.empty((2, 3, 4)))
    out_gpu = gpu.attention_forward(up(q), up(k), up(v), up(bias), 0.7, causal, CudaArray.empty((2, 3, 4), np.float64, cuda))
    np.testing.assert_allclose(out_gpu.to_host(), out, rtol=1e-10, atol=1e-12)
    res = cpu.attention_backward(grad, out, q, k, v, bias, 0.7, causal, np.empty((2, 26)))
    res_gpu = gpu.attention_backward(up(grad), out_gpu, up(q), up(k), up(v), up(bias), 0.7, causal,
                                     CudaArray.empty((2, 26), np.float64, cuda))  # fmt: skip
    np.testing.assert_allclose(res_gpu.to_host(), res, rtol=1e-10, atol=1e-12)


def test_attention_launcher_refuses_bad_shapes():
    from numdiff.cuda.array import CudaArray
    from numdiff.cuda.kernels import attention as gpu

    cuda = numdiff.device("cuda")
    z = lambda *s: CudaArray.empty(s, np.float64, cuda)  # noqa: E731
    with pytest.raises(ValueError, match=r"attention_forward: expected q \(B, L, E\), k \(B, S, E\), v \(B, S, Ev\)"):
        gpu.attention_forward(z(2, 3, 4), z(2, 5, 3), z(2, 5, 4), z(0, 0, 0), 1.0, False, z(2, 3, 5))
