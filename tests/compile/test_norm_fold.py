"""numdiff.compile folds a normalisation's batch statistics and the ReLU after it into one kernel
(numdiff.compile.norm_fold): BatchNorm, InstanceNorm and GroupNorm train as in eager mode, running
statistics and num_batches_tracked included, over shapes, dtypes and layer kinds."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import numdiff
from numdiff import nn
from numdiff.kernels.norm import group_norm_forward, group_norm_moments
from numdiff.kernels.norm_fold import group_norm_forward_fold

LAYERS = {
    "bn2d": lambda c: nn.BatchNorm2d(c),
    "bn2d-no-affine": lambda c: nn.BatchNorm2d(c, affine=False),
    "bn2d-no-running-stats": lambda c: nn.BatchNorm2d(c, track_running_stats=False),
    "instance": lambda c: nn.InstanceNorm2d(c, affine=True),
    "group": lambda c: nn.GroupNorm(2, c),
}


def _net(norm: str, c_in: int, c_out: int, kernel: int, dtype) -> nn.Module:
    numdiff.manual_seed(3)
    net = nn.Sequential(nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, bias=False), LAYERS[norm](c_out),
                        nn.ReLU(), nn.Conv2d(c_out, c_out, 3, stride=2), LAYERS[norm](c_out), nn.ReLU())
    return net.to(dtype)


def _train(net: nn.Module, forward, batches: list) -> list:
    optimizer = numdiff.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for x in batches:
        optimizer.zero_grad()
        loss = (forward(x) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _forward_source(compiled: nn.Module) -> str:
    (trace,) = [t for traces in compiled.compiled.traces.values() for t in traces]
    return trace.program.source.split("def forward(")[1].split("def backward(")[0]


@pytest.mark.parametrize("norm", sorted(LAYERS))
@pytest.mark.parametrize(("shape", "kernel", "dtype"), [
    ((4, 3, 10, 10), 3, numdiff.float32), ((3, 2, 7, 9), 5, numdiff.float64), ((6, 5, 6, 6), 1, numdiff.float32),
])  # fmt: skip
def test_a_folded_norm_and_relu_train_like_eager(norm, shape, kernel, dtype):
    rng = np.random.default_rng(sum(shape) + kernel)
    batches = [numdiff.tensor(rng.standard_normal(shape) * 2 + 0.5, dtype=dtype) for _ in range(4)]
    c_out = 6 if norm == "group" else 4
    eager, compiled_net = _net(norm, shape[1], c_out, kernel, dtype), _net(norm, shape[1], c_out, kernel, dtype)
    compiled = numdiff.compile(compiled_net)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        compiled_losses = _train(compiled_net, compiled, batches)
    eager_losses = _train(eager, eager, batches)
    assert compiled.compile_count == 1
    assert _forward_source(compiled).count("group_norm_forward_fold(") == 2
    assert "Relu_forward" not in _forward_source(compiled) and "GroupedMoments" not in _forward_source(compiled)
    tolerance = dict(rtol=1e-4, atol=1e-5) if dtype == numdiff.float32 else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(compiled_losses, eager_losses, **tolerance)
    for (name, p), q in zip(eager.named_parameters(), compiled_net.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), err_msg=name, **tolerance)
    compiled_buffers = dict(compiled_net.named_buffers())
    for name, buffer in eager.named_buffers():
        np.testing.assert_allclose(compiled_buffers[name].numpy(), buffer.numpy(), err_msg=name, **tolerance)
    if norm.startswith("bn2d") and norm != "bn2d-no-running-stats":
        assert int(compiled_net[1].num_batches_tracked.item()) == len(batches)


@pytest.mark.parametrize("shape", [(16, 5), (12, 3, 7)])
def test_batchnorm1d_rows_fold_with_their_statistics(shape):
    # (N, C, L) folds; (N, C) stays on eager's column kernels (numdiff.kernels.norm_columns), which sweep
    # whole rows where the fold would walk strided columns. Both give eager's numbers.
    rng = np.random.default_rng(len(shape))
    batches = [numdiff.tensor(rng.standard_normal(shape) - 0.3, dtype=numdiff.float64) for _ in range(3)]

    def net() -> nn.Module:
        numdiff.manual_seed(5)
        return nn.Sequential(nn.BatchNorm1d(shape[1]), nn.ReLU()).to(numdiff.float64)

    eager, compiled_net = net(), net()
    compiled = numdiff.compile(compiled_net)
    np.testing.assert_allclose(_train(compiled_net, compiled, batches), _train(eager, eager, batches), rtol=1e-12)
    assert ("group_norm_forward_fold(" in _forward_source(compiled)) == (len(shape) == 3)
    np.testing.assert_allclose(compiled_net[0].running_var.numpy(), eager[0].running_var.numpy(), rtol=1e-12)
    np.testing.assert_allclose(compiled_net[0].running_mean.numpy(), eager[0].running_mean.numpy(), rtol=1e-12)


@pytest.mark.parametrize("after", ["leaky_relu", "returned", "relu and tanh"])
def test_a_norm_output_read_elsewhere_keeps_its_own_array_and_still_shares_the_statistics(after):
    rng = np.random.default_rng(1)
    x = numdiff.tensor(rng.standard_normal((5, 3, 4, 4)), dtype=numdiff.float64, requires_grad=True)
    bn_eager, bn_compiled = nn.BatchNorm2d(3).double(), nn.BatchNorm2d(3).double()
    heads = {
        "leaky_relu": lambda y: (nn.functional.leaky_relu(y, 0.1) ** 2).sum(),
        "returned": lambda y: (nn.functional.relu(y).sum(), y),
        "relu and tanh": lambda y: (nn.functional.relu(y) * y.tanh()).sum(),
    }

    def run(bn):
        return lambda x: heads[after](bn(x))

    compiled = numdiff.compile(run(bn_compiled))
    for _ in range(2):
        got = compiled(x)
        got = got[0] if isinstance(got, tuple) else got
        (g_compiled,) = numdiff.autograd.grad(got, [x])
        expected = run(bn_eager)(x)
        expected = expected[0] if isinstance(expected, tuple) else expected
        (g_eager,) = numdiff.autograd.grad(expected, [x])
        np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-12)
        np.testing.assert_allclose(g_compiled.numpy(), g_eager.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(bn_compiled.running_var.numpy(), bn_eager.running_var.numpy(), rtol=1e-12)
    (trace,) = [t for traces in compiled.compiled.traces.values() for t in traces]
    forward = trace.program.source.split("def backward(")[0]
    assert "group_norm_forward_fold(" in forward and "GroupedMoments" not in forward
    # The norm's output is kept (or read twice), so the activation is written to an array of its own.
    assert forward.count("activated=") == 1 and "Relu_forward" not in forward


@pytest.mark.parametrize(("view", "dtype"), [((1, 8, 4, 1, 50), np.float32), ((1, 16, 3, 1, 1), np.float64),
                                             ((2, 1, 3, 2, 7), np.float32), ((3, 1, 1, 5, 1), np.float64)])
@pytest.mark.parametrize("relu", [False, True])
def test_the_fold_kernel_equals_the_eager_kernels_bit_for_bit(view, dtype, relu):
    rng = np.random.default_rng(len(view) + view[1])
    x = (rng.standard_normal(view) * 3 + 1).astype(dtype)
    weight, bias = rng.standard_normal(view[2:4]).astype(dtype), rng.standard_normal(view[2:4]).astype(dtype)
    out, mean, rstd = np.empty_like(x), np.empty((view[0], view[2]), dtype), np.empty((view[0], view[2]), dtype)
    moments = np.empty((2, view[0], view[2]), dtype)
    group_norm_forward_fold(x, weight, bias, 1e-5, out, mean, rstd, moments, "relu" if relu else None)
    expected, expected_mean, expected_rstd = np.empty_like(x), np.empty_like(mean), np.empty_like(rstd)
    group_norm_forward(x, weight, bias, 1e-5, expected, expected_mean, expected_rstd)
    if relu:
        expected = np.where(expected <= 0, 0, expected)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(mean, expected_mean)
    np.testing.assert_array_equal(rstd, expected_rstd)
    np.testing.assert_array_equal(moments, group_norm_moments(x, np.empty_like(moments)))
    # and against NumPy's own statistics
    axes = (1, 3, 4)
    np.testing.assert_allclose(moments[0], x.mean(axes), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(moments[1], x.var(axes), rtol=1e-4, atol=1e-6)


def test_the_fold_kernel_names_itself_and_the_bad_shape():
    x = np.zeros((1, 4, 3, 1, 5), np.float32)
    good = dict(weight=np.ones((3, 1), np.float32), bias=np.zeros((3, 1), np.float32), eps=1e-5,
                out=np.empty_like(x), mean=np.empty((1, 3), np.float32), rstd=np.empty((1, 3), np.float32),
                moments=np.empty((2, 1, 3), np.float32), activation="relu")
    with pytest.raises(ValueError, match=r"group_norm_forward_fold.*moments.*\(2, 1, 3\)"):
        group_norm_forward_fold(x, **{**good, "moments": np.empty((2, 3), np.float32)})
    with pytest.raises(ValueError, match="group_norm_forward_fold: x must be a 5-D view"):
        group_norm_forward_fold(x[0], **good)
    with pytest.raises(TypeError, match="group_norm_forward_fold.*dtype"):
        group_norm_forward_fold(x, **{**good, "out": np.empty(x.shape, np.float64)})


class _Block(nn.Module):
    """A ResNet basic block: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out)
        self.conv2, self.bn2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False), nn.BatchNorm2d(c_out)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        out = nn.functional.relu(self.bn1(self.conv1(x)))
        return nn.functional.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


@pytest.mark.parametrize(("c_in", "c_out", "stride", "size", "dtype"), [
    (4, 4, 1, 6, numdiff.float64), (3, 6, 2, 9, numdiff.float32), (5, 5, 1, 5, numdiff.float32),
])  # fmt: skip
def test_a_residual_blocks_norm_add_and_relu_fold_and_train_like_eager(c_in, c_out, stride, size, dtype):
    rng = np.random.default_rng(c_in * 10 + stride)
    batches = [numdiff.tensor(rng.standard_normal((4, c_in, size, size)), dtype=dtype) for _ in range(3)]

    def net() -> nn.Module:
        numdiff.manual_seed(9)
        # a relu first: the block's input, and so its identity shortcut, is a fused loop's value
        return nn.Sequential(nn.ReLU(), _Block(c_in, c_out, stride), _Block(c_out, c_out, 1)).to(dtype)

    eager, compiled_net = net(), net()
    compiled = numdiff.compile(compiled_net)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled_losses = _train(compiled_net, compiled, batches)
    eager_losses = _train(eager, eager, batches)
    tolerance = dict(rtol=1e-4, atol=1e-5) if dtype == numdiff.float32 else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(compiled_losses, eager_losses, **tolerance)
    for (name, p), q in zip(eager.named_parameters(), compiled_net.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), err_msg=name, **tolerance)
    compiled_buffers = dict(compiled_net.named_buffers())
    for name, buffer in eager.named_buffers():
        np.testing.assert_allclose(compiled_buffers[name].numpy(), buffer.numpy(), err_msg=name, **tolerance)
    forward = _forward_source(compiled)
    norms = 5 if stride != 1 or c_in != c_out else 4
    assert forward.count("group_norm_forward_fold(") == norms and "GroupedMoments" not in forward
    assert forward.count("Relu_forward") == 1  # the input's; every relu after a norm is folded
    assert forward.count("'relu', _c(v") == 2  # each block's second norm: + shortcut, then relu


def test_the_fold_kernel_adds_a_residual_to_the_rounded_values_before_its_relu():
    rng = np.random.default_rng(2)
    view = (1, 6, 3, 1, 20)
    x, residual = rng.standard_normal(view).astype(np.float32), rng.standard_normal(view).astype(np.float32)
    weight, bias = np.ones((3, 1), np.float32), np.full((3, 1), 0.1, np.float32)
    stats = [np.empty((1, 3), np.float32), np.empty((1, 3), np.float32), np.empty((2, 1, 3), np.float32)]
    out = group_norm_forward_fold(x, weight, bias, 1e-5, np.empty_like(x), *stats, "relu", residual)
    normed = np.empty_like(x)
    group_norm_forward(x, weight, bias, 1e-5, normed, np.empty((1, 3), np.float32), np.empty((1, 3), np.float32))
    np.testing.assert_array_equal(out, np.maximum(normed + residual, 0))


EPILOGUES = {  # fold kernel keywords -> the eager op applied after the norm (and the residual's add)
    "relu": ({"activation": "relu"}, lambda t: numdiff.nn.functional.relu(t)),
    "relu6": ({"activation": "hardtanh", "min_val": 0.0, "max_val": 6.0},
              lambda t: numdiff.nn.functional.hardtanh(t, 0.0, 6.0)),
    "leaky": ({"activation": "leaky_relu", "negative_slope": 0.1},
              lambda t: numdiff.nn.functional.leaky_relu(t, 0.1)),
}


@pytest.mark.parametrize(("view", "dtype"), [((1, 5, 4, 1, 16), np.float32), ((2, 3, 2, 3, 9), np.float32),
                                             ((1, 7, 3, 1, 64), np.float64), ((4, 3, 1, 6, 1), np.float32)])
@pytest.mark.parametrize("epilogue", sorted(EPILOGUES))
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("with_residual", [False, True])
def test_every_epilogue_of_the_fold_kernel_equals_eagers_chain_over_groups_and_short_rows(
        view, dtype, epilogue, keep, with_residual):
    # The sweep and its epilogue index whole arrays by (b, n, g, k): every case, over several (b, g)
    # groups, k > 1, short rows (S = 9, 16) and rows over k (S = 1), against the eager kernels.
    rng = np.random.default_rng(view[3] + view[4])
    x, residual = (rng.standard_normal(view) * 3 + 1).astype(dtype), rng.standard_normal(view).astype(dtype)
    weight, bias = rng.standard_normal(view[2:4]).astype(dtype), rng.standard_normal(view[2:4]).astype(dtype)
    keywords, eager_op = EPILOGUES[epilogue]
    stats = [np.empty((view[0], view[2]), dtype), np.empty((view[0], view[2]), dtype),
             np.empty((2, view[0], view[2]), dtype)]
    out, activated = np.empty_like(x), np.empty_like(x) if keep else None
    got = group_norm_forward_fold(x, weight, bias, 1e-5, out, *stats, residual=residual if with_residual else None,
                                  activated=activated, **keywords)
    normed = np.empty_like(x)
    group_norm_forward(x, weight, bias, 1e-5, normed, np.empty_like(stats[0]), np.empty_like(stats[1]))
    before = normed + residual if with_residual else normed
    np.testing.assert_array_equal(got, eager_op(numdiff.tensor(before)).numpy())
    if keep:
        np.testing.assert_array_equal(out, before)
    np.testing.assert_array_equal(stats[2], group_norm_moments(x, np.empty_like(stats[2])))


@pytest.mark.parametrize(("batch", "channels", "size"), [(2, 3, 5), (1, 1, 4)])
def test_batchnorm3d_and_relu_fold_in_a_volumetric_step(batch, channels, size):
    rng = np.random.default_rng(batch * 7 + size)
    batches = [numdiff.tensor(rng.standard_normal((batch, channels, size, size, size))) for _ in range(3)]

    def net() -> nn.Module:
        numdiff.manual_seed(11)
        return nn.Sequential(nn.Conv3d(channels, 4, 3, padding=1, bias=False), nn.BatchNorm3d(4), nn.ReLU(),
                             nn.MaxPool3d(2), nn.Conv3d(4, 2, 1), nn.BatchNorm3d(2), nn.ReLU()).double()

    eager, compiled_net = net(), net()
    compiled = numdiff.compile(compiled_net)
    np.testing.assert_allclose(_train(compiled_net, compiled, batches), _train(eager, eager, batches), rtol=1e-10)
    assert _forward_source(compiled).count("group_norm_forward_fold(") == 2
    for name, buffer in eager.named_buffers():
        np.testing.assert_allclose(dict(compiled_net.named_buffers())[name].numpy(), buffer.numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=name)



def test_the_fold_kernels_parallel_build_equals_the_eager_kernels(two_threads):
    # 16 x 8 x 512 = 65536 elements at two threads: the parallel build runs (serial below 32768).
    rng = np.random.default_rng(12)
    view = (1, 16, 8, 1, 512)
    x, residual = rng.standard_normal(view).astype(np.float32), rng.standard_normal(view).astype(np.float32)
    weight, bias = rng.standard_normal((8, 1)).astype(np.float32), rng.standard_normal((8, 1)).astype(np.float32)
    stats = [np.empty((1, 8), np.float32), np.empty((1, 8), np.float32), np.empty((2, 1, 8), np.float32)]
    out = group_norm_forward_fold(x, weight, bias, 1e-5, np.empty_like(x), *stats, "relu", residual)
    normed, mean, rstd = np.empty_like(x), np.empty((1, 8), np.float32), np.empty((1, 8), np.float32)
    group_norm_forward(x, weight, bias, 1e-5, normed, mean, rstd)
    np.testing.assert_array_equal(out, np.maximum(normed + residual, 0))
    np.testing.assert_array_equal(stats[0], mean)
    np.testing.assert_array_equal(stats[2], group_norm_moments(x, np.empty((2, 1, 8), np.float32)))
