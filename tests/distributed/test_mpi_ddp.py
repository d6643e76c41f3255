"""DistributedDataParallel against one process training on the global batch from the same weights."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.nn.parallel import DistributedDataParallel

PER_RANK = 4
TOLERANCE = {numdiff.float64: 1e-10, numdiff.float32: 1e-5}


# No bias before BatchNorm: its gradient is zero up to rounding, which Adam would amplify into
# steps of size lr in float32 and make the comparison meaningless.
def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(6, 8, bias=False), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, bias=False),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 3 * 3, 3),
    )


def global_batches(world: int, input_shape: tuple, dtype, steps: int):
    rng = np.random.default_rng(1234)
    for _ in range(steps):
        x = rng.standard_normal((PER_RANK * world,) + input_shape)
        y = rng.integers(0, 3, PER_RANK * world)
        yield numdiff.tensor(x, dtype=dtype), numdiff.tensor(y)


def make_optimizer(kind: str, params):
    if kind == "sgd":
        return numdiff.optim.SGD(params, lr=0.1, momentum=0.9)
    return numdiff.optim.Adam(params, lr=0.01)


@pytest.mark.parametrize("dtype", [numdiff.float64, numdiff.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("model_fn,input_shape", [(mlp, (6,)), (cnn, (1, 6, 6))], ids=["mlp_bn", "cnn_bn"])
def test_five_steps_match_one_process_on_the_global_batch(dist, dtype, optimizer, model_fn, input_shape):
    rank, world = dist.get_rank(), dist.get_world_size()
    numdiff.manual_seed(0)
    reference = model_fn().to(dtype=dtype)
    # Other ranks start from other weights: construction must broadcast rank 0's.
    numdiff.manual_seed(rank)
    local = nn.SyncBatchNorm.convert_sync_batchnorm(model_fn().to(dtype=dtype))
    model = DistributedDataParallel(local)
    ref_opt = make_optimizer(optimizer, reference.parameters())
    opt = make_optimizer(optimizer, model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    for x, y in global_batches(world, input_shape, dtype, steps=5):
        ref_opt.zero_grad()
        loss_fn(reference(x), y).backward()
        ref_opt.step()
        shard = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
        opt.zero_grad()
        loss_fn(model(x[shard]), y[shard]).backward()
        opt.step()
    tolerance = TOLERANCE[dtype]
    ours, theirs = model.module.state_dict(), reference.state_dict()
    assert list(ours) == list(theirs)
    for name in theirs:
        np.testing.assert_allclose(
            ours[name].numpy(), theirs[name].numpy(), rtol=tolerance, atol=tolerance, err_msg=name
        )
    flat = numdiff.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [numdiff.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    for other in gathered[1:]:
        np.testing.assert_array_equal(other.numpy(), gathered[0].numpy())


def plain_mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))


def test_no_sync_accumulates_locally_then_averages_the_sum(dist):
    rank, world = dist.get_rank(), dist.get_world_size()
    numdiff.manual_seed(3)
    reference = plain_mlp().double()
    model = DistributedDataParallel(plain_mlp().double())
    model.module.load_state_dict(reference.state_dict())
    batches = list(global_batches(world, (5,), numdiff.float64, steps=2))
    shard = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
    loss_fn = nn.CrossEntropyLoss()
    with model.no_sync():
        loss_fn(model(batches[0][0][shard]), batches[0][1][shard]).backward()
    local_only = [p.grad.numpy().copy() for p in model.parameters()]
    loss_fn(model(batches[1][0][shard]), batches[1][1][shard]).backward()
    for x, y in batches:
        loss_fn(reference(x), y).backward()
    for ours, theirs in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-12)
    # Inside no_sync nothing was communicated: the first gradients were this rank's own.
    reference.zero_grad()
    loss_fn(reference(batches[0][0][shard]), batches[0][1][shard]).backward()
    for ours, theirs in zip(local_only, reference.parameters()):
        np.testing.assert_allclose(ours, theirs.grad.numpy(), rtol=1e-12, atol=1e-12)


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(3, 4)
        self.shared_head = nn.Linear(4, 1)
        self.rank0_head = nn.Linear(4, 1)
        self.never_used = nn.Linear(4, 1)

    def forward(self, x, use_rank0_head):
        h = self.body(x).tanh()
        out = self.shared_head(h)
        return out + self.rank0_head(h) if use_rank0_head else out


def test_find_unused_parameters_averages_with_zeros_and_leaves_globally_unused_alone(dist):
    rank, world = dist.get_rank(), dist.get_world_size()
    numdiff.manual_seed(0)
    model = DistributedDataParallel(TwoHeads().double(), find_unused_parameters=True)
    x = numdiff.ones(2, 3, dtype=numdiff.float64) * (rank + 1)
    model(x, use_rank0_head=rank == 0).sum().backward()
    # rank 0's head gradient, computed the same way on every rank, averaged with zeros.
    probe = TwoHeads().double()
    probe.load_state_dict(model.module.state_dict())
    probe(numdiff.ones(2, 3, dtype=numdiff.float64), use_rank0_head=True).sum().backward()
    np.testing.assert_allclose(
        model.module.rank0_head.weight.grad.numpy(), probe.rank0_head.weight.grad.numpy() / world, rtol=1e-12
    )
    assert model.module.never_used.weight.grad is None
    model(x, use_rank0_head=False).sum().backward()  # a second iteration works too


def test_a_parameter_without_gradient_raises_at_the_next_forward_naming_it(dist):
    model = DistributedDataParallel(TwoHeads().double())
    x = numdiff.ones(2, 3, dtype=numdiff.float64)
    model(x, use_rank0_head=True).sum().backward()
    with pytest.raises(RuntimeError, match=r"did not produce gradients for parameters \['never_used.weight'"):
        model(x, use_rank0_head=True)
    dist.barrier()


def test_models_that_differ_between_ranks_raise_on_every_rank(dist):
    rank = dist.get_rank()
    width = 5 if rank == dist.get_world_size() - 1 else 4
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, width))
    with pytest.raises(dist.DistributedError, match=r"'2.weight' of shape \((5|4), 4\)"):
        DistributedDataParallel(model)
    dist.barrier()


def test_buffers_are_broadcast_from_rank_zero_at_each_training_forward(dist):
    rank = dist.get_rank()
    model = DistributedDataParallel(nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)).double())
    with numdiff.no_grad():
        model.module[1].running_mean.fill_(float(rank + 1))
    x = numdiff.tensor(np.random.default_rng(rank).standard_normal((4, 2)))
    model(x)
    # The forward first overwrote this rank's running_mean with rank 0's (ones), then moved it
    # by momentum 0.1 towards this rank's batch mean.
    with numdiff.no_grad():
        batch_mean = model.module[0](x).mean(0)
    np.testing.assert_allclose(
        model.module[1].running_mean.numpy(), 0.9 * 1.0 + 0.1 * batch_mean.numpy(), rtol=1e-12
    )
