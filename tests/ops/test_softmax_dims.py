"""softmax and log_softmax along every dim, float32 and float64, contiguous and strided inputs
(numdiff.kernels.softmax through the ops): PyTorch's values and input gradients; nll_loss after
log_softmax as PyTorch's MNIST example runs it; a 0-d input; the dtype argument; double backward."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling
from numdiff.autograd import gradgradcheck

TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-13)}


VIEWS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.permute(2, 0, 1) if hasattr(a, "permute") else a.transpose(2, 0, 1),
    "sliced": lambda a: a[:, ::2, 1:],
}


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", list(VIEWS))
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_every_dim_and_layout_matches_torch(name, dtype, layout, dim):
    rng = np.random.default_rng(3)
    base = (rng.standard_normal((6, 10, 7)) * 5).astype(dtype)
    view = VIEWS[layout]
    seed = rng.standard_normal(view(base).shape).astype(dtype)
    xm, xt = numdiff.tensor(base, requires_grad=True), torch.tensor(base, requires_grad=True)
    out_m = getattr(F, name)(view(xm), dim=dim)  # the strided view itself, as a user's slice gives it
    out_t = getattr(torch.nn.functional, name)(view(xt), dim=dim)
    out_m.backward(numdiff.tensor(seed))
    out_t.backward(torch.tensor(seed))
    np.testing.assert_allclose(out_m.detach().numpy(), out_t.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("classes", [10, 1000])
def test_nll_loss_after_log_softmax_matches_torch(classes):
    rng = np.random.default_rng(classes)
    logits = (rng.standard_normal((32, classes)) * 3).astype(np.float32)
    target = rng.integers(0, classes, 32)
    xm, xt = numdiff.tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
    loss_m = F.nll_loss(F.log_softmax(xm, dim=1), numdiff.tensor(target))
    loss_t = torch.nn.functional.nll_loss(torch.nn.functional.log_softmax(xt, dim=1), torch.tensor(target))
    loss_m.backward()
    loss_t.backward()
    np.testing.assert_allclose(loss_m.item(), loss_t.item(), rtol=2e-6)
    np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), rtol=2e-5, atol=2e-8)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_zero_dim_input_is_one_line(name):
    x = numdiff.tensor(2.5, requires_grad=True)
    out = getattr(numdiff, name)(x, 0)
    out.backward()
    assert out.item() == (1.0 if name == "softmax" else 0.0)
    assert x.grad.item() == 0.0


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_dtype_argument_computes_in_that_dtype(name):
    values = np.random.default_rng(8).standard_normal((3, 5)).astype(np.float32)
    got = getattr(F, name)(numdiff.tensor(values), dim=0, dtype=numdiff.float64)
    want = getattr(torch.nn.functional, name)(torch.tensor(values), dim=0, dtype=torch.float64)
    assert got.dtype == numdiff.float64
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_log_softmax_second_order_along_each_dim(dim):
    x = numdiff.tensor(np.random.default_rng(9).standard_normal((3, 4, 2)), requires_grad=True)
    assert gradgradcheck(lambda x: numdiff.log_softmax(x, dim).square(), (x,))
