"""numdiff.compile folds the LeakyReLU or Hardtanh (ReLU6) after a normalisation into the norm's
kernel as it folds ReLU (numdiff.compile.norm_fold), writing the norm's output too when the backward
keeps it: a DCGAN discriminator's BatchNorm + LeakyReLU, InstanceNorm and GroupNorm + LeakyReLU, a
residual block ending in a LeakyReLU, MobileNet's BatchNorm + ReLU6. The numbers are eager's: bit for bit in the kernel, and over several
optimizer steps (parameters and running statistics) in training. Activations the kernel does not
apply, and activations that do not read the norm's output directly, are left to their own ops."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import numdiff
from numdiff import nn
from numdiff.kernels.norm import group_norm_forward
from numdiff.kernels.norm_fold import group_norm_forward_fold

NORMS = {
    "bn2d": lambda c: nn.BatchNorm2d(c),
    "bn2d-no-running-stats": lambda c: nn.BatchNorm2d(c, track_running_stats=False),
    "instance": lambda c: nn.InstanceNorm2d(c, affine=True),
    "group": lambda c: nn.GroupNorm(3, c),
}


def _eager_leaky(values: np.ndarray, slope: float) -> np.ndarray:
    return numdiff.nn.functional.leaky_relu(numdiff.tensor(values), slope).numpy()


def _stats(view: tuple, dtype) -> list:
    return [np.empty((view[0], view[2]), dtype), np.empty((view[0], view[2]), dtype),
            np.empty((2, view[0], view[2]), dtype)]


@pytest.mark.parametrize(("view", "dtype"), [((2, 5, 3, 1, 37), np.float32), ((1, 16, 4, 1, 1), np.float64),
                                             ((3, 1, 2, 3, 11), np.float32), ((4, 1, 2, 6, 1), np.float32)])
@pytest.mark.parametrize("slope", [0.2, 0.01, -0.7])
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("with_residual", [False, True])
def test_the_fold_kernels_leaky_relu_equals_the_eager_kernels_bit_for_bit(view, dtype, slope, keep, with_residual):
    rng = np.random.default_rng(view[1] * 3 + view[4])
    x = (rng.standard_normal(view) * 3 + 0.2).astype(dtype)
    weight, bias = rng.standard_normal(view[2:4]).astype(dtype), rng.standard_normal(view[2:4]).astype(dtype)
    residual = rng.standard_normal(view).astype(dtype) if with_residual else None
    out, activated = np.empty_like(x), np.empty_like(x) if keep else None
    stats = _stats(view, dtype)
    result = group_norm_forward_fold(x, weight, bias, 1e-5, out, *stats, "leaky_relu", residual, negative_slope=slope,
                                     activated=activated)
    normed, expected_stats = np.empty_like(x), _stats(view, dtype)
    group_norm_forward(x, weight, bias, 1e-5, normed, *expected_stats[:2])
    if with_residual:
        normed = normed + residual
    np.testing.assert_array_equal(result, _eager_leaky(normed, slope))
    if keep:
        np.testing.assert_array_equal(out, normed)  # the value before the activation, for the backward
    np.testing.assert_array_equal(stats[0], expected_stats[0])
    np.testing.assert_array_equal(stats[1], expected_stats[1])


@pytest.mark.parametrize(("view", "dtype"), [((2, 5, 3, 1, 37), np.float32), ((1, 16, 4, 1, 1), np.float64),
                                             ((3, 1, 2, 3, 11), np.float32)])
@pytest.mark.parametrize(("low", "high"), [(0.0, 6.0), (-0.3, 0.7), (-1.0, 1.0)])
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("with_residual", [False, True])
def test_the_fold_kernels_hardtanh_equals_the_eager_kernels_bit_for_bit(view, dtype, low, high, keep, with_residual):
    rng = np.random.default_rng(view[1] + view[4])
    x = (rng.standard_normal(view) * 4 + 1).astype(dtype)
    weight, bias = rng.standard_normal(view[2:4]).astype(dtype) * 8, rng.standard_normal(view[2:4]).astype(dtype)
    residual = rng.standard_normal(view).astype(dtype) if with_residual else None
    out, activated = np.empty_like(x), np.empty_like(x) if keep else None
    result = group_norm_forward_fold(x, weight, bias, 1e-5, out, *_stats(view, dtype), "hardtanh", residual,
                                     activated=activated, min_val=low, max_val=high)
    normed = np.empty_like(x)
    group_norm_forward(x, weight, bias, 1e-5, normed, *_stats(view, dtype)[:2])
    if with_residual:
        normed = normed + residual
    expected = numdiff.nn.functional.hardtanh(numdiff.tensor(normed), low, high).numpy()
    np.testing.assert_array_equal(result, expected)
    assert (result == np.asarray(low, dtype)).any() and (result == np.asarray(high, dtype)).any()
    if keep:
        np.testing.assert_array_equal(out, normed)


def test_the_fold_kernel_writes_relu_to_an_array_of_its_own_when_the_norm_output_is_kept():
    rng = np.random.default_rng(4)
    view = (2, 3, 2, 1, 10)
    x, weight, bias = rng.standard_normal(view), np.ones((2, 1)), np.zeros((2, 1))
    out, activated = np.empty_like(x), np.empty_like(x)
    group_norm_forward_fold(x, weight, bias, 1e-5, out, *_stats(view, np.float64), "relu", activated=activated)
    normed = np.empty_like(x)
    group_norm_forward(x, weight, bias, 1e-5, normed, *_stats(view, np.float64)[:2])
    np.testing.assert_array_equal(out, normed)
    np.testing.assert_array_equal(activated, np.where(normed <= 0, 0, normed))


def test_the_fold_kernel_names_a_bad_activation_and_a_bad_activated_array():
    view = (1, 4, 3, 1, 5)
    x = np.zeros(view, np.float32)
    args = (x, np.ones((3, 1), np.float32), np.zeros((3, 1), np.float32), 1e-5, np.empty_like(x),
            *_stats(view, np.float32))
    with pytest.raises(ValueError, match=r"group_norm_forward_fold: activation must be one of .*'tanh'"):
        group_norm_forward_fold(*args, "tanh")
    with pytest.raises(ValueError, match="group_norm_forward_fold: an activated array was given without"):
        group_norm_forward_fold(*args, None, activated=np.empty_like(x))
    with pytest.raises(ValueError, match=r"group_norm_forward_fold.*activated.*\(1, 4, 3, 1, 5\)"):
        group_norm_forward_fold(*args, "leaky_relu", activated=np.empty((1, 4, 3, 5), np.float32))
    with pytest.raises(TypeError, match="group_norm_forward_fold.*activated.*float"):
        group_norm_forward_fold(*args, "relu", activated=np.empty(view, np.float64))


def _train(net: nn.Module, forward, batches: list, steps_of=numdiff.optim.Adam) -> list:
    optimizer = steps_of(net.parameters(), lr=0.05)
    losses = []
    for x in batches:
        optimizer.zero_grad()
        loss = (forward(x) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _forward_source(compiled) -> str:
    (trace,) = [t for traces in compiled.compiled.traces.values() for t in traces]
    return trace.program.source.split("def forward(")[1].split("def backward(")[0]


def _assert_trained_alike(eager: nn.Module, compiled_net: nn.Module, tolerance: dict) -> None:
    for (name, p), q in zip(eager.named_parameters(), compiled_net.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), err_msg=name, **tolerance)
    compiled_buffers = dict(compiled_net.named_buffers())
    for name, buffer in eager.named_buffers():
        np.testing.assert_allclose(compiled_buffers[name].numpy(), buffer.numpy(), err_msg=name, **tolerance)


@pytest.mark.parametrize("norm", sorted(NORMS))
@pytest.mark.parametrize(("shape", "slope", "dtype", "inplace"), [
    ((4, 3, 10, 10), 0.2, numdiff.float32, True), ((3, 2, 7, 9), 0.01, numdiff.float64, False),
    ((5, 4, 6, 6), 0.3, numdiff.float32, False),
])  # fmt: skip
def test_a_discriminators_norm_and_leaky_relu_fold_and_train_like_eager(norm, shape, slope, dtype, inplace):
    # DCGAN's discriminator: LeakyReLU(0.2, inplace=True) after each BatchNorm.
    rng = np.random.default_rng(sum(shape))
    batches = [numdiff.tensor(rng.standard_normal(shape) * 2 - 0.3, dtype=dtype) for _ in range(4)]

    def net() -> nn.Module:
        numdiff.manual_seed(7)
        return nn.Sequential(nn.Conv2d(shape[1], 6, 3, padding=1, bias=False), NORMS[norm](6), nn.LeakyReLU(slope, inplace),
                             nn.Conv2d(6, 6, 4, 2, 1, bias=False), NORMS[norm](6), nn.LeakyReLU(slope, inplace),
                             nn.Conv2d(6, 1, 3)).to(dtype)  # fmt: skip

    eager, compiled_net = net(), net()
    compiled = numdiff.compile(compiled_net)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        compiled_losses = _train(compiled_net, compiled, batches)
    eager_losses = _train(eager, eager, batches)
    forward = _forward_source(compiled)
    assert forward.count("'leaky_relu'") == 2 and "LeakyRelu_forward" not in forward
    assert forward.count("activated=") == 2  # leaky_relu's backward reads the norm's output: both are written
    tolerance = dict(rtol=1e-4, atol=1e-5) if dtype == numdiff.float32 else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(compiled_losses, eager_losses, **tolerance)
    _assert_trained_alike(eager, compiled_net, tolerance)


@pytest.mark.parametrize("slope", [0.1, 0.25])
def test_the_folded_forward_equals_eagers_bit_for_bit_without_a_backward(slope):
    # No gradient: the norm's output is not kept, so the leaky_relu is applied into it in place.
    rng = np.random.default_rng(5)
    x = numdiff.tensor(rng.standard_normal((6, 5, 9, 7)).astype(np.float32))

    def net() -> nn.Module:
        numdiff.manual_seed(2)
        return nn.Sequential(nn.Conv2d(5, 8, 3), nn.BatchNorm2d(8), nn.LeakyReLU(slope))

    eager, compiled_net = net(), net()
    compiled = numdiff.compile(compiled_net)
    with numdiff.no_grad():
        for _ in range(2):
            np.testing.assert_array_equal(compiled(x).numpy(), eager(x).numpy())
    forward = _forward_source(compiled)
    assert "'leaky_relu'" in forward and "activated=" not in forward
    # The running estimates' update is a fused loop of its own (contracted to fused multiply-adds).
    np.testing.assert_allclose(compiled_net[1].running_var.numpy(), eager[1].running_var.numpy(), rtol=1e-6)


@pytest.mark.parametrize(("activation", "norm"), [
    (lambda: nn.ReLU6(), "bn2d"), (lambda: nn.Hardtanh(-0.5, 0.8), "instance"), (lambda: nn.ReLU6(), "group"),
])  # fmt: skip
def test_a_norm_and_relu6_or_hardtanh_fold_and_train_like_eager(activation, norm):
    # MobileNet's Conv-BatchNorm-ReLU6 unit, and a clamp of other bounds after InstanceNorm or GroupNorm.
    rng = np.random.default_rng(6)
    batches = [numdiff.tensor(rng.standard_normal((4, 3, 9, 9)) * 3, dtype=numdiff.float32) for _ in range(3)]

    def net() -> nn.Module:
        numdiff.manual_seed(3)
        return nn.Sequential(nn.Conv2d(3, 6, 3, bias=False), NORMS[norm](6), activation(),
                             nn.Conv2d(6, 6, 3, 2, groups=6, bias=False), NORMS[norm](6), activation(),
                             nn.Conv2d(6, 2, 1))  # fmt: skip

    eager, compiled_net = net(), net()
    compiled = numdiff.compile(compiled_net)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled_losses = _train(compiled_net, compiled, batches)
    eager_losses = _train(eager, eager, batches)
    forward = _forward_source(compiled)
    assert forward.count("'hardtanh'") == 2 and "Hardtanh_forward" not in forward
    tolerance = dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(compiled_losses, eager_losses, **tolerance)
    _assert_trained_alike(eager, compiled_net, tolerance)


class _LeakyBlock(nn.Module):
    """A residual block ending in leaky_relu(bn2(conv2(h)) + x)."""

    def __init__(self, c: int, slope: float) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c)
        self.slope = slope

    def forward(self, x):
        h = nn.functional.leaky_relu(self.bn1(self.conv1(x)), self.slope)
        return nn.functional.leaky_relu(self.bn2(self.conv2(h)) + x, self.slope)


@pytest.mark.parametrize(("c", "size", "dtype"), [(4, 6, numdiff.float64), (3, 7, numdiff.float32)])
def test_a_residual_block_ending_in_leaky_relu_folds_its_add_and_trains_like_eager(c, size, dtype):
    rng = np.random.default_rng(c + size)
    batches = [numdiff.tensor(rng.standard_normal((3, c, size, size)), dtype=dtype) for _ in range(3)]

    def net() -> nn.Module:
        numdiff.manual_seed(13)
        return nn.Sequential(nn.Conv2d(c, c, 1), _LeakyBlock(c, 0.1)).to(dtype)

    eager, compiled_net = net(), net()
    compiled = numdiff.compile(compiled_net)
    compiled_losses = _train(compiled_net, compiled, batches, numdiff.optim.SGD)
    eager_losses = _train(eager, eager, batches, numdiff.optim.SGD)
    forward = _forward_source(compiled)
    assert forward.count("'leaky_relu', _c(v") == 1  # the second norm: + the shortcut, then leaky_relu
    assert forward.count("'leaky_relu', None") == 1 and "LeakyRelu_forward" not in forward
    tolerance = dict(rtol=1e-4, atol=1e-5) if dtype == numdiff.float32 else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(compiled_losses, eager_losses, **tolerance)
    _assert_trained_alike(eager, compiled_net, tolerance)


@pytest.mark.parametrize("head", ["tanh", "sigmoid", "leaky_relu of a view", "leaky_relu in float64"])
def test_activations_the_fold_cannot_apply_stay_ops_of_their_own_and_keep_eagers_numbers(head):
    heads = {
        "tanh": lambda y: y.tanh(),
        "sigmoid": lambda y: y.sigmoid(),
        "leaky_relu of a view": lambda y: nn.functional.leaky_relu(y.transpose(2, 3), 0.2),
        "leaky_relu in float64": lambda y: nn.functional.leaky_relu(y.double(), 0.2),
    }
    rng = np.random.default_rng(8)
    x = numdiff.tensor(rng.standard_normal((4, 3, 5, 6)).astype(np.float32), requires_grad=True)
    bn_eager, bn_compiled = nn.BatchNorm2d(3), nn.BatchNorm2d(3)

    def run(bn):
        return lambda x: (heads[head](bn(x)) ** 2).sum()

    compiled = numdiff.compile(run(bn_compiled))
    for _ in range(2):
        got, expected = compiled(x), run(bn_eager)(x)
        (g_compiled,), (g_eager,) = numdiff.autograd.grad(got, [x]), numdiff.autograd.grad(expected, [x])
        np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-5)
        np.testing.assert_allclose(g_compiled.numpy(), g_eager.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(bn_compiled.running_mean.numpy(), bn_eager.running_mean.numpy())
    forward = _forward_source(compiled)
    assert "group_norm_forward_fold(" in forward  # the statistics still fold
    assert "'leaky_relu'" not in forward and "'relu'" not in forward


@pytest.mark.parametrize("activation", [nn.ReLU(), nn.LeakyReLU(0.2)])
@pytest.mark.parametrize("shape", [(12, 24), (3, 5, 40)])
def test_a_layer_norm_and_its_activation_keep_eagers_row_kernel_and_numbers(activation, shape):
    # LayerNorm's view (rows, 1, 1, width, 1) runs eager's row kernel (numdiff.kernels.norm_rows), whose
    # float32 sums differ from the fold kernel's in the last bit: the fold must leave it alone.
    rng = np.random.default_rng(shape[-1])
    x = numdiff.tensor(rng.standard_normal(shape).astype(np.float32) * 2 + 1)

    def net() -> nn.Module:
        numdiff.manual_seed(4)
        return nn.Sequential(nn.Linear(shape[-1], shape[-1]), nn.LayerNorm(shape[-1]), activation)

    eager, compiled_net = net(), net()
    compiled = numdiff.compile(compiled_net)
    with numdiff.no_grad():
        for _ in range(2):
            np.testing.assert_array_equal(compiled(x).numpy(), eager(x).numpy())
