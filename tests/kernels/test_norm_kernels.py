"""The fused group normalisation (numdiff.kernels.norm, numdiff.ops.norm) under BatchNorm1d/2d/3d
in training, InstanceNorm, GroupNorm and LayerNorm: outputs, gradients and running statistics against
PyTorch in float32 and float64; float64 gradient checks through the layers; refusals of bad
arrays before a kernel runs; vmap and numdiff.compile over the fused op."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import numdiff
import numdiff.nn as nn
from numdiff.autograd import gradcheck, gradgradcheck
from numdiff.kernels import norm as kernels
from numdiff.ops import norm as fused

LAYERS = [
    ("BatchNorm1d-2d-input", "BatchNorm1d", (4,), {}, (6, 4)),
    ("BatchNorm1d-3d-input", "BatchNorm1d", (3,), {}, (5, 3, 7)),
    ("BatchNorm2d", "BatchNorm2d", (3,), {}, (4, 3, 5, 6)),
    ("BatchNorm2d-no-affine", "BatchNorm2d", (3,), {"affine": False}, (2, 3, 4, 4)),
    ("BatchNorm3d", "BatchNorm3d", (2,), {}, (3, 2, 3, 4, 2)),
    ("InstanceNorm2d-affine-running", "InstanceNorm2d", (3,), {"affine": True, "track_running_stats": True}, (2, 3, 4, 5)),
    ("GroupNorm", "GroupNorm", (2, 6), {}, (3, 6, 4)),
    ("GroupNorm-one-group-4d", "GroupNorm", (1, 4), {"affine": False}, (2, 4, 3, 3)),
    ("LayerNorm-two-dims", "LayerNorm", ((3, 4),), {}, (2, 5, 3, 4)),
    ("LayerNorm-no-bias", "LayerNorm", (6,), {"bias": False}, (4, 6)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, layer, ctor, kwargs, shape", LAYERS, ids=[row[0] for row in LAYERS])
def test_fused_norm_layers_match_torch(name, layer, ctor, kwargs, shape, dtype):
    rng = np.random.default_rng(7)
    mine = getattr(nn, layer)(*ctor, **kwargs).to(getattr(numdiff, dtype))
    theirs = getattr(torch.nn, layer)(*ctor, **kwargs).to(getattr(torch, dtype))
    for p, q in zip(mine.parameters(), theirs.parameters()):
        values = rng.standard_normal(tuple(p.shape)).astype(dtype)
        with numdiff.no_grad():
            p.copy_(numdiff.tensor(values))
        with torch.no_grad():
            q.copy_(torch.tensor(values))
    x = (rng.standard_normal(shape) * 2 + 3).astype(dtype)
    seed = rng.standard_normal(shape).astype(dtype)
    xm, xt = numdiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_m, out_t = mine(xm), theirs(xt)
    (out_m * numdiff.tensor(seed)).sum().backward()
    (out_t * torch.tensor(seed)).sum().backward()
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(out_m.detach().numpy(), out_t.detach().numpy(), **tol)
    np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), **tol)
    for (pname, p), q in zip(mine.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), err_msg=pname, **tol)
    for (bname, b), c in zip(mine.named_buffers(), theirs.buffers()):
        np.testing.assert_allclose(b.numpy(), c.numpy(), err_msg=bname, **tol)


@pytest.mark.parametrize(
    "fn, shape, params",
    [
        (lambda x, w, b: nn.functional.batch_norm(x, None, None, w, b, training=True), (4, 3, 5), 3),
        (lambda x, w, b: nn.functional.group_norm(x, 2, w, b), (2, 4, 3), 4),
        (lambda x, w, b: nn.functional.instance_norm(x, weight=w, bias=b), (2, 3, 4), 3),
        (lambda x, w, b: nn.functional.layer_norm(x, (3,), w, b), (2, 4, 3), 3),
    ],
    ids=["batch_norm", "group_norm", "instance_norm", "layer_norm"],
)
def test_fused_norm_gradients_and_second_derivatives(fn, shape, params):
    rng = np.random.default_rng(3)
    x = numdiff.tensor(rng.standard_normal(shape), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal(params), requires_grad=True)
    b = numdiff.tensor(rng.standard_normal(params), requires_grad=True)
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_batch_norm_records_one_fused_node_whose_output_an_inplace_activation_may_change():
    x = numdiff.randn(4, 3, 2, 2, requires_grad=True)
    out = nn.functional.batch_norm(x, numdiff.zeros(3), numdiff.ones(3), training=True)
    assert out.grad_fn.name() == "GroupedNormBackward"
    # As in PyTorch the output is no view (a DCGAN's BatchNorm -> LeakyReLU(inplace=True) needs that).
    nn.functional.leaky_relu(out, 0.2, inplace=True).sum().backward()
    assert x.grad is not None and tuple(x.grad.shape) == (4, 3, 2, 2)


def test_half_precision_input_takes_the_float32_kernel():
    x = np.random.default_rng(0).standard_normal((4, 3, 2)).astype(np.float16)
    out = nn.functional.group_norm(numdiff.tensor(x), 3)
    expected = torch.nn.functional.group_norm(torch.tensor(x).float(), 3).half()
    assert out.dtype == numdiff.float16
    np.testing.assert_allclose(out.numpy().astype(np.float32), expected.numpy().astype(np.float32), atol=2e-3)


def test_kernel_refuses_wrong_shapes_and_dtypes_by_name():
    x = np.zeros((1, 2, 3, 1, 4))
    stats = np.zeros((1, 3))
    with pytest.raises(ValueError, match=r"group_norm_forward: weight must have shape \(3, 1\)"):
        kernels.group_norm_forward(x, np.ones((2, 1)), np.zeros((3, 1)), 1e-5, np.empty_like(x), stats, stats)
    with pytest.raises(TypeError, match="group_norm_forward: .* must be float32 or float64, got int64"):
        kernels.group_norm_forward(x.astype(np.int64), np.ones((3, 1)), np.zeros((3, 1)), 1e-5, x, stats, stats)
    with pytest.raises(ValueError, match=r"group_norm_backward: x must be a 5-D view \(B, N, G, K, S\), got shape \(2, 3\)"):
        kernels.group_norm_backward(*(np.zeros((2, 3)),) * 2, np.ones((3, 1)), stats, stats, *(np.zeros((2, 3)),) * 3)
    with pytest.raises(ValueError, match=r"group_norm_backward: mean must have shape \(1, 3\), got \(3,\)"):
        kernels.group_norm_backward(x, x, np.ones((3, 1)), np.zeros(3), stats, np.empty_like(x), np.ones((3, 1)), np.ones((3, 1)))


def test_vmap_of_group_norm_folds_into_the_batch_and_matches_a_loop():
    rng = np.random.default_rng(5)
    xs = numdiff.tensor(rng.standard_normal((3, 2, 4, 5)))
    w = numdiff.tensor(rng.standard_normal(4))
    batched = numdiff.func.vmap(lambda x: nn.functional.group_norm(x, 2, w))(xs)
    looped = numdiff.stack([nn.functional.group_norm(x, 2, w) for x in xs])
    np.testing.assert_allclose(batched.numpy(), looped.numpy(), rtol=1e-12, atol=1e-12)


def test_vmap_of_batch_norm_running_moments_keeps_each_entry_apart():
    rng = np.random.default_rng(6)
    xs = numdiff.tensor(rng.standard_normal((3, 4, 2, 5)))
    batched = numdiff.func.vmap(lambda x: fused.grouped_moments(x, (1, 4, 2, 1, 5)))(xs)
    looped = numdiff.stack([fused.grouped_moments(x, (1, 4, 2, 1, 5)) for x in xs])
    assert tuple(batched.shape) == (3, 2, 1, 2)
    np.testing.assert_allclose(batched.numpy(), looped.numpy(), rtol=1e-12, atol=1e-12)


def test_moments_kernel_refuses_a_wrong_output_shape():
    with pytest.raises(ValueError, match=r"group_norm_moments: moments must have shape \(2, 1, 3\), got \(2, 3\)"):
        kernels.group_norm_moments(np.zeros((1, 2, 3, 1, 4)), np.zeros((2, 3)))


def test_compiled_batch_norm_step_keeps_running_stats_and_gradients_without_fallback():
    rng = np.random.default_rng(9)

    def build():
        model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.GroupNorm(1, 3))
        return model.double()

    eager, compiled_model = build(), build()
    compiled_model.load_state_dict(eager.state_dict())
    loss_of = numdiff.compile(lambda x: compiled_model(x).square().sum())
    for _ in range(2):
        x = numdiff.tensor(rng.standard_normal((4, 2, 5, 5)))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            loss_c = loss_of(x)
            loss_c.backward()
        loss_e = eager(x).square().sum()
        loss_e.backward()
        np.testing.assert_allclose(loss_c.item(), loss_e.item(), rtol=1e-10)
    for (name, p), q in zip(eager.named_parameters(), compiled_model.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-9, atol=1e-10, err_msg=name)
    for (name, b), c in zip(eager.named_buffers(), compiled_model.buffers()):
        np.testing.assert_allclose(c.numpy(), b.numpy(), rtol=1e-10, err_msg=name)
