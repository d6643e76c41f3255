"""numdiff.compile on device="cuda" (the simulator without a GPU): compiled equals eager.

On CUDA, fused elementwise groups become generated @cuda.jit kernels and the other ops launch
numdiff's CUDA kernels through their array forwards.
"""

from __future__ import annotations

import numpy as np

import numdiff
from tests.cuda.test_train_step_cuda import tiny_digits_cnn


def test_compiled_function_on_cuda_matches_eager_forward_and_gradient():
    f = numdiff.compile(lambda x, w: ((x * w).sin().exp() + x).sum())
    rng = np.random.default_rng(0)
    x = numdiff.tensor(rng.standard_normal(6), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal(6)).to("cuda").requires_grad_()
    xc = x.detach().to("cuda").requires_grad_()
    f(xc, w)  # traced on one draw, replayed on another
    xc2 = numdiff.tensor(rng.standard_normal(6)).to("cuda").requires_grad_()
    out = f(xc2, w)
    out.backward()
    x2 = xc2.detach().cpu().requires_grad_()
    w2 = w.detach().cpu().requires_grad_()
    expected = ((x2 * w2).sin().exp() + x2).sum()
    expected.backward()
    np.testing.assert_allclose(out.item(), expected.item(), rtol=1e-12)
    np.testing.assert_allclose(xc2.grad.cpu().numpy(), x2.grad.numpy(), rtol=1e-12)
    (source,) = f.compiled.sources
    assert "@cuda.jit" in source and "launch_cuda_fused" in source


def test_fused_cuda_group_with_broadcast_and_float32_matches_the_cpu():
    f = numdiff.compile(lambda x, b: (x * b + 1.5).relu().exp() - b)
    rng = np.random.default_rng(2)
    x = numdiff.tensor(rng.standard_normal((2, 3)), dtype=numdiff.float32)
    b = numdiff.tensor(rng.standard_normal(3), dtype=numdiff.float32)
    got = f(x.to("cuda").requires_grad_(), b.to("cuda"))
    want = f(x.requires_grad_(), b)
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_compiled_tiny_cnn_gradients_on_cuda_match_the_cpu():
    numdiff.manual_seed(0)
    cpu = tiny_digits_cnn()
    gpu = tiny_digits_cnn()
    gpu.load_state_dict(cpu.state_dict())
    gpu.to("cuda")
    images = numdiff.tensor(np.random.default_rng(1).uniform(0, 1, (2, 1, 8, 8)), dtype=numdiff.float32)
    compiled = numdiff.compile(gpu)
    compiled(images.to("cuda")).sum().backward()
    cpu(images).sum().backward()
    for (name, p), q in zip(cpu.named_parameters(), gpu.parameters()):
        np.testing.assert_allclose(q.grad.cpu().numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_branching_on_an_integer_cuda_input_retraces_on_its_value():
    f = numdiff.compile(lambda x, n: x * 2 if n.item() > 0 else x * 3)
    x = numdiff.ones(2, device="cuda")
    positive = numdiff.tensor(np.array([1]), device="cuda")
    np.testing.assert_array_equal(f(x, positive).cpu().numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(f(x, numdiff.tensor(np.array([-1]), device="cuda")).cpu().numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(f(x, positive).cpu().numpy(), [2.0, 2.0])
    assert f.compiled.compile_count == 2


def test_compiled_batchnorm_and_dropout_on_cuda_write_back_and_draw_like_eager():
    numdiff.manual_seed(0)
    model = numdiff.nn.Sequential(numdiff.nn.Linear(4, 6), numdiff.nn.BatchNorm1d(6), numdiff.nn.Dropout(0.5))
    eager = numdiff.nn.Sequential(numdiff.nn.Linear(4, 6), numdiff.nn.BatchNorm1d(6), numdiff.nn.Dropout(0.5))
    eager.load_state_dict(model.state_dict())
    model.to("cuda")
    compiled = numdiff.compile(model)
    for step in range(3):
        x = numdiff.randn(5, 4)
        numdiff.manual_seed(10 + step)
        got = compiled(x.to("cuda"))
        numdiff.manual_seed(10 + step)
        expected = eager(x)
        np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert compiled.compile_count == 1 and compiled.compiled.eager_reason is None
    for name, buffer in eager.named_buffers():
        np.testing.assert_allclose(dict(model.named_buffers())[name].cpu().numpy(), buffer.numpy(), rtol=1e-5,
                                   err_msg=name)
