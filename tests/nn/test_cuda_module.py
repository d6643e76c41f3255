"""Modules on CUDA: to("cuda") moves parameters, gradients and buffers in place (Parameter objects kept).

Skipped without a GPU; on a machine without one, run it on Numba's simulator:
``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/nn/test_cuda_module.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
import numdiff.nn.functional as nnf

if not numdiff.cuda.is_available():
    pytest.skip(
        "CUDA is not available; run with NUMBA_ENABLE_CUDASIM=1 to use the simulator", allow_module_level=True
    )


def test_to_cuda_keeps_parameter_objects_and_moves_buffers():
    model = nn.Sequential(nn.LayerNorm(3), nn.BatchNorm1d(3))
    params = list(model.parameters())
    model.to("cuda")
    assert all(a is b for a, b in zip(params, model.parameters()))
    assert all(p.device.type == "cuda" and p.is_leaf and p.requires_grad for p in params)
    assert all(b.device.type == "cuda" for b in model.buffers())
    model.cpu()
    assert all(p.device.type == "cpu" for p in model.parameters())


def test_training_step_on_cuda_matches_the_cpu(rng):
    numdiff.manual_seed(0)
    cpu_model = nn.Sequential(nn.LayerNorm(3), nn.GELU(), nn.BatchNorm1d(3)).double()
    gpu_model = nn.Sequential(nn.LayerNorm(3), nn.GELU(), nn.BatchNorm1d(3)).double()
    gpu_model.load_state_dict(cpu_model.state_dict())
    gpu_model.cuda()
    x = rng.standard_normal((5, 3))
    target = np.array([0, 2, 1, 1, 0])
    results = []
    for model, device in ((cpu_model, "cpu"), (gpu_model, "cuda")):
        logits = model(numdiff.tensor(x).to(device))
        loss = nnf.cross_entropy(logits, numdiff.tensor(target).to(device), label_smoothing=0.1)
        loss.backward()
        results.append((loss.item(), [p.grad.cpu().numpy() for p in model.parameters()], model[2].running_var.cpu().numpy()))
    (cpu_loss, cpu_grads, cpu_var), (gpu_loss, gpu_grads, gpu_var) = results
    assert gpu_loss == pytest.approx(cpu_loss, rel=1e-9)
    for a, b in zip(cpu_grads, gpu_grads):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gpu_var, cpu_var, rtol=1e-9)


def test_embedding_and_losses_on_cuda():
    emb = nn.Embedding(4, 2, padding_idx=0).cuda()
    out = emb(numdiff.tensor([0, 3]).to("cuda"))
    assert out.device.type == "cuda" and out.cpu().tolist()[0] == [0.0, 0.0]
    probs = numdiff.tensor([0.2, 0.9]).to("cuda")
    value = nnf.binary_cross_entropy(probs, numdiff.tensor([0.0, 1.0]).to("cuda"))
    assert value.item() == pytest.approx(-(np.log(0.8) + np.log(0.9)) / 2, rel=1e-6)
