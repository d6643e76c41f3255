"""Collectives on every rank of an `mpiexec -n N` job: values, layouts, async handles, errors."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

DTYPES = [numdiff.float32, numdiff.float64]


def rank_values(dist, shape, dtype, rank=None):
    """A tensor whose values differ per rank and per element (so a wrong rank or offset shows)."""
    rank = dist.get_rank() if rank is None else rank
    count = int(np.prod(shape))
    values = (np.arange(count, dtype=np.float64).reshape(shape) + 1) * (rank + 1) * 0.5
    return numdiff.tensor(values, dtype=dtype)


def all_ranks(dist, shape, dtype):
    return [rank_values(dist, shape, dtype, r).numpy() for r in range(dist.get_world_size())]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (1000, 1000)], ids=["0d", "1d", "2d", "large"])
@pytest.mark.parametrize("op", ["SUM", "AVG", "MAX", "MIN", "PRODUCT"])
def test_all_reduce_combines_every_rank_in_place(dist, dtype, shape, op):
    t = rank_values(dist, shape, dtype)
    storage = t._data
    version = t._version
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    parts = np.stack(all_ranks(dist, shape, dtype)).astype(np.float64)
    expected = {
        "SUM": parts.sum(0),
        "AVG": parts.mean(0),
        "MAX": parts.max(0),
        "MIN": parts.min(0),
        "PRODUCT": parts.prod(0),
    }[op]
    rtol = 1e-6 if dtype == numdiff.float32 else 1e-14
    np.testing.assert_allclose(t.numpy(), expected, rtol=rtol)
    assert t._data is storage and t._version > version


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_reduce_of_a_non_contiguous_view_writes_into_its_base(dist, dtype):
    base = rank_values(dist, (4, 6), dtype)
    view = base.t()[::2]  # (3, 4), strided
    untouched = base.numpy()[:, 1::2].copy()
    dist.all_reduce(view)
    expected = np.stack([p.T[::2] for p in all_ranks(dist, (4, 6), dtype)]).sum(0)
    np.testing.assert_allclose(view.numpy(), expected, rtol=1e-6)
    np.testing.assert_array_equal(base.numpy()[:, 1::2], untouched)
    np.testing.assert_allclose(base.numpy()[:, ::2].T, expected, rtol=1e-6)


def test_async_all_reduce_returns_a_handle_that_finishes_on_wait(dist):
    t = rank_values(dist, (1000,), numdiff.float64)
    work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    assert work.wait() is True and work.is_completed()
    np.testing.assert_allclose(t.numpy(), np.stack(all_ranks(dist, (1000,), numdiff.float64)).mean(0))


@pytest.mark.parametrize("dtype", DTYPES + [numdiff.int64])
def test_broadcast_copies_the_source_rank(dist, dtype):
    src = dist.get_world_size() - 1
    t = rank_values(dist, (3, 5), dtype)
    dist.broadcast(t, src=src)
    np.testing.assert_array_equal(t.numpy(), rank_values(dist, (3, 5), dtype, src).numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_gather_fills_one_tensor_per_rank(dist, dtype):
    world = dist.get_world_size()
    outputs = [numdiff.zeros(2, 3, dtype=dtype) for _ in range(world)]
    work = dist.all_gather(outputs, rank_values(dist, (2, 3), dtype).t().t(), async_op=True)
    work.wait()
    for out, expected in zip(outputs, all_ranks(dist, (2, 3), dtype)):
        np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_scatter_leaves_rank_r_the_reduction_of_part_r(dist, dtype):
    world, rank = dist.get_world_size(), dist.get_rank()
    inputs = [rank_values(dist, (4,), dtype) * (part + 1) for part in range(world)]
    out = numdiff.zeros(4, dtype=dtype)
    dist.reduce_scatter(out, inputs)
    expected = sum(p for p in all_ranks(dist, (4,), dtype)) * (rank + 1)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES + [numdiff.int64])
@pytest.mark.parametrize("op", ["SUM", "AVG", "MAX"])
def test_reduce_leaves_the_reduction_on_dst_only(dist, dtype, op):
    if op == "AVG" and dtype == numdiff.int64:
        pytest.skip("AVG needs floating point")
    dst = dist.get_world_size() - 1
    t = rank_values(dist, (2, 3), dtype).t()  # not contiguous: reduced through a copy
    dist.reduce(t, dst=dst, op=getattr(dist.ReduceOp, op))
    ranks = np.stack(all_ranks(dist, (2, 3), dtype))
    expected = {"SUM": ranks.sum(0), "AVG": ranks.mean(0), "MAX": ranks.max(0)}[op].T
    if dist.get_rank() == dst:
        np.testing.assert_allclose(t.numpy(), expected, rtol=1e-6)
    else:
        np.testing.assert_array_equal(t.numpy(), rank_values(dist, (2, 3), dtype).t().numpy())


def test_barrier_and_rank_queries(dist):
    dist.barrier()
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    assert 0 <= dist.get_rank() < dist.get_world_size()


def test_bad_arguments_raise_before_any_communication(dist):
    world = dist.get_world_size()
    with pytest.raises(ValueError, match=r"all_gather: tensor_list must hold one tensor per rank"):
        dist.all_gather([numdiff.zeros(2)] * (world + 1), numdiff.zeros(2))
    with pytest.raises(ValueError, match=r"tensor_list\[0\] has shape \(3,\)"):
        dist.all_gather([numdiff.zeros(3)] * world, numdiff.zeros(2))
    with pytest.raises(ValueError, match=r"broadcast: src must be a rank in \[0, "):
        dist.broadcast(numdiff.zeros(2), src=world)
    with pytest.raises(TypeError, match=r"ReduceOp.AVG needs a floating-point tensor, got numdiff.int64"):
        dist.all_reduce(numdiff.zeros(2, dtype=numdiff.int64), op=dist.ReduceOp.AVG)
    with pytest.raises(TypeError, match=r"all_reduce: tensor must be a numdiff Tensor, got ndarray"):
        dist.all_reduce(np.zeros(2))
    with pytest.raises(ValueError, match=r"timeout must be a positive number"):
        dist.all_reduce(numdiff.zeros(2), timeout=-1)
    dist.barrier()


def test_differentiable_all_reduce_sums_gradients_over_ranks(dist):
    from numdiff.distributed.nn.functional import all_reduce

    world, rank = dist.get_world_size(), dist.get_rank()
    x = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64, requires_grad=True)
    y = all_reduce(x * (rank + 1))  # every rank holds sum_r (r+1) x
    (y * y).sum().backward()  # each rank's loss; backward sums dL_r/dy over ranks
    total = sum(r + 1 for r in range(world))
    # d/dx_rank of sum_r ||y||^2 = world * 2 y * (rank+1), with y = total * x
    np.testing.assert_allclose(x.grad.numpy(), world * 2 * total * np.array([1.0, 2.0]) * (rank + 1))


def test_checkpoint_saved_on_rank_zero_loads_on_every_rank(dist, tmp_path_factory):
    # Every rank must agree on one file: rank 0 picks it and broadcasts its length-prefixed name.
    name = np.zeros(256, dtype=np.int64)
    if dist.get_rank() == 0:
        chosen = str(tmp_path_factory.mktemp("ckpt") / "model.npz").encode()
        name[: len(chosen)] = np.frombuffer(chosen, dtype=np.uint8)
    shared = numdiff.from_numpy(name)
    dist.broadcast(shared, src=0)
    target = bytes(shared.numpy().astype(np.uint8)).rstrip(b"\0").decode()
    state = {"w": numdiff.arange(6.0).reshape(2, 3) * 3}
    if dist.get_rank() == 0:
        numdiff.save(state, target)
    dist.barrier()
    loaded = numdiff.load(target)
    np.testing.assert_array_equal(loaded["w"].numpy(), state["w"].numpy())
    dist.barrier()
