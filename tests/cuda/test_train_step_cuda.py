"""Acceptance: the digits CNN trains on device="cuda", one Adam step equal to the CPU's.

A tiny version of examples/train_digits.py's model (Conv2d, ReLU, MaxPool2d, Linear; fewer
channels) on a batch of four 8x8 images: the same initial weights are copied to a second model on
CUDA, both run forward, CrossEntropyLoss, backward and one Adam step, and the loss, every gradient
and every updated weight must agree to 1e-4. float32, as the digits model trains: float64 agreement
to 1e-9 is pinned kernel by kernel and op by op (test_conv_pool_kernels_cuda, test_op_cases_cuda),
and a second run of this step would double the simulator's time. The smallest nonzero gradient
here is about 6e-5, far above Adam's eps (1e-8), so float32 rounding cannot flip an update.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.cuda.array import CudaArray


def tiny_digits_cnn() -> numdiff.nn.Module:
    nn = numdiff.nn
    return nn.Sequential(
        nn.Conv2d(1, 2, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(2, 4, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 2 * 2, 8),
        nn.ReLU(),
        nn.Linear(8, 10),
    )


def adam_step(model: numdiff.nn.Module, images: numdiff.Tensor, labels: numdiff.Tensor) -> tuple:
    """(loss, gradients, updated weights) of one Adam step, all copied to the host."""
    optimizer = numdiff.optim.Adam(model.parameters(), lr=1e-3)
    optimizer.zero_grad()
    loss = numdiff.nn.CrossEntropyLoss()(model(images), labels)
    loss.backward()
    grads = {name: p.grad.cpu().numpy() for name, p in model.named_parameters()}
    optimizer.step()
    weights = {name: p.detach().cpu().numpy() for name, p in model.named_parameters()}
    return loss.item(), grads, weights


def test_one_adam_step_of_the_digits_cnn_on_cuda_matches_the_cpu():
    dtype, tol = numdiff.float32, 1e-4
    numdiff.manual_seed(0)
    cpu_model = tiny_digits_cnn().to(dtype=dtype)
    initial = {name: p.detach().numpy().copy() for name, p in cpu_model.named_parameters()}
    cuda_model = tiny_digits_cnn().to(dtype=dtype)
    cuda_model.load_state_dict(cpu_model.state_dict())
    cuda_model.to("cuda")
    assert all(isinstance(p._data, CudaArray) for p in cuda_model.parameters())

    rng = np.random.default_rng(0)
    images = numdiff.tensor(rng.uniform(0.0, 1.0, (4, 1, 8, 8)), dtype=dtype)
    labels = numdiff.tensor(np.array([3, 0, 7, 3]))
    cpu_loss, cpu_grads, cpu_weights = adam_step(cpu_model, images, labels)
    cuda_loss, cuda_grads, cuda_weights = adam_step(cuda_model, images.to("cuda"), labels.to("cuda"))

    assert cuda_loss == pytest.approx(cpu_loss, rel=tol, abs=tol)
    for name, want in cpu_grads.items():
        np.testing.assert_allclose(cuda_grads[name], want, rtol=tol, atol=tol, err_msg=name)
        assert np.any(want != 0), f"{name} got no gradient: the step would not test its update"
    for name, want in cpu_weights.items():
        assert not np.array_equal(want, initial[name]), f"Adam left {name} unchanged"
        np.testing.assert_allclose(cuda_weights[name], want, rtol=tol, atol=tol, err_msg=name)
