"""The fused group normalisation on device="cuda" (numdiff.cuda.kernels.norm): BatchNorm2d in
training, InstanceNorm1d, GroupNorm and LayerNorm give the CPU's output, input gradient, parameter gradients
and running statistics (float64, 1e-10); the launchers refuse bad arrays before launching. Tiny
shapes for the simulator."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn

if not numdiff.cuda.is_available():
    pytest.skip("CUDA is not available; run `python3 -m pytest tests/cuda` to use the simulator", allow_module_level=True)

from numdiff.cuda.array import CudaArray  # noqa: E402 - only where CUDA (or its simulator) is present
from numdiff.cuda.kernels import norm as cuda_norm  # noqa: E402

LAYERS = [
    ("BatchNorm2d", lambda: nn.BatchNorm2d(3), (4, 3, 2, 3)),
    ("InstanceNorm1d-affine", lambda: nn.InstanceNorm1d(2, affine=True), (2, 2, 5)),
    ("GroupNorm", lambda: nn.GroupNorm(2, 4), (2, 4, 3)),
    ("BatchNorm1d-no-affine", lambda: nn.BatchNorm1d(3, affine=False), (5, 3)),
    ("LayerNorm", lambda: nn.LayerNorm(4), (2, 3, 4)),
]


@pytest.mark.parametrize("name, build, shape", LAYERS, ids=[layer[0] for layer in LAYERS])
def test_norm_layer_on_cuda_matches_the_cpu(name, build, shape):
    rng = np.random.default_rng(1)
    cpu = build().double()
    for p in cpu.parameters():
        with numdiff.no_grad():
            p.copy_(numdiff.tensor(rng.standard_normal(tuple(p.shape))))
    gpu = build().double()
    gpu.load_state_dict(cpu.state_dict())
    gpu.cuda()
    x = rng.standard_normal(shape) * 3 + 1
    x_cpu = numdiff.tensor(x, requires_grad=True)
    x_gpu = numdiff.tensor(x, device="cuda", requires_grad=True)
    out_cpu, out_gpu = cpu(x_cpu), gpu(x_gpu)
    seed = rng.standard_normal(shape)
    (out_cpu * numdiff.tensor(seed)).sum().backward()
    (out_gpu * numdiff.tensor(seed, device="cuda")).sum().backward()
    close = dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out_gpu.detach().cpu().numpy(), out_cpu.detach().numpy(), **close)
    np.testing.assert_allclose(x_gpu.grad.cpu().numpy(), x_cpu.grad.numpy(), **close)
    for (pname, p_cpu), p_gpu in zip(cpu.named_parameters(), gpu.parameters()):
        np.testing.assert_allclose(p_gpu.grad.cpu().numpy(), p_cpu.grad.numpy(), err_msg=pname, **close)
    for (bname, b_cpu), b_gpu in zip(cpu.named_buffers(), gpu.buffers()):
        np.testing.assert_allclose(b_gpu.cpu().numpy(), b_cpu.numpy(), err_msg=bname, **close)


def test_cuda_launcher_names_the_kernel_and_the_bad_shape():
    x = CudaArray.empty((1, 2, 3, 1, 4), np.float64, numdiff.device("cuda"))
    stats = CudaArray.empty((1, 3), np.float64, numdiff.device("cuda"))
    wrong = CudaArray.empty((2, 1), np.float64, numdiff.device("cuda"))
    with pytest.raises(ValueError, match=r"group_norm_forward: weight must have shape \(3, 1\), got \(2, 1\)"):
        cuda_norm.group_norm_forward(x, wrong, wrong, 1e-5, x, stats, stats)
    with pytest.raises(TypeError, match="group_norm_forward: x must be a CUDA array"):
        cuda_norm.group_norm_forward(np.zeros((1, 2, 3, 1, 4)), wrong, wrong, 1e-5, x, stats, stats)
