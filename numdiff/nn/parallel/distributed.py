"""DistributedDataParallel: one model replica per rank, gradients averaged during backward.

Each rank runs forward and backward on its own part of the batch. Parameters are grouped into
buckets (reverse registration order, about `bucket_cap_mb` each), since gradients become final
roughly from the last layer to the first. A post-accumulate-grad hook on each parameter copies
its finished `.grad` into its bucket; a full bucket starts a non-blocking all-reduce at once, so
communication overlaps the rest of backward. Buckets start strictly in index order, so every
rank issues the same collectives in the same order even when gradients arrive in another order.
When the last bucket has started, the hook waits for all of them and writes the averages back
into `.grad`, so backward returns with synchronised gradients, as in PyTorch.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from numdiff.autograd.function import AccumulateGrad
from numdiff.autograd.grad_mode import is_grad_enabled, no_grad
from numdiff.backend import like_host, to_host
from numdiff.distributed import _group
from numdiff.distributed.collectives import Work, broadcast, check_same_across_ranks, wait_for
from numdiff.nn.modules.module import Module
from numdiff.tensor import Tensor

FIRST_BUCKET_BYTES = 2**20


class _Bucket:
    """Parameters whose gradients travel in one all-reduce, in one flat host buffer."""

    def __init__(self, indices: list[int], params: list[Tensor]) -> None:
        self.indices = indices
        sizes = [p.numel() for p in params]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.buffer = np.zeros(int(self.offsets[-1]), dtype=params[0]._data.dtype)
        self.waiting = len(indices)
        self.work: Work | None = None

    def view(self, slot: int, shape: tuple) -> np.ndarray:
        return self.buffer[self.offsets[slot] : self.offsets[slot + 1]].reshape(shape)


class DistributedDataParallel(Module):
    """Wrap `module` for data-parallel training; call it as you would call the module.

    >>> dist.init_process_group(backend="mpi")
    >>> model = DistributedDataParallel(Net())           # rank 0's weights reach every rank
    >>> loss_fn(model(x_local), y_local).backward()      # .grad is the average over ranks
    >>> optimizer.step()

    - `find_unused_parameters=True` lets some parameters receive no gradient in an iteration
      (the graph is walked after forward to find them); without it such a model raises at the
      next forward, naming the parameters that received none.
    - `broadcast_buffers=True` copies rank 0's buffers (BatchNorm running statistics) to every
      rank at each training forward. Use `nn.SyncBatchNorm` for batch statistics over all ranks.
    - `no_sync()` skips the all-reduce, so gradients accumulate locally until the next synced
      backward.
    CUDA parameters are reduced through host memory.
    """

    def __init__(
        self,
        module: Module,
        device_ids: Any = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float = 25.0,
        find_unused_parameters: bool = False,
    ) -> None:
        super().__init__()
        name = "DistributedDataParallel"
        pg = _group.current(name)
        if not isinstance(module, Module):
            raise TypeError(f"{name}: expected an nn.Module, got {type(module).__name__}")
        if process_group is not None:
            raise ValueError(f"{name}: only the default process group is supported, got {process_group!r}")
        if dim != 0:
            raise ValueError(f"{name}: the batch is split along dim 0 by your sampler; got dim={dim}")
        if not bucket_cap_mb > 0:
            raise ValueError(f"{name}: bucket_cap_mb must be positive, got {bucket_cap_mb!r}")
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        check_same_across_ranks(name, "parameters", [(n, tuple(p.shape), str(p.dtype)) for n, p in named])
        buffers = list(module.named_buffers())
        check_same_across_ranks(name, "buffers", [(n, tuple(b.shape), str(b.dtype)) for n, b in buffers])
        with no_grad():
            for _, p in module.named_parameters():
                broadcast(p, src=0)
            for _, b in buffers:
                broadcast(b, src=0)
        self._world = pg.size
        self._names = [n for n, _ in named]
        self._params = [p for _, p in named]
        self._buckets, self._place = _make_buckets(self._params, bucket_cap_mb * 2**20)
        self._hook_handles = [
            p.register_post_accumulate_grad_hook(self._make_hook(i)) for i, p in enumerate(self._params)
        ]
        self._reset(sync=False)
        self.comm_wait_seconds = 0.0  # time backward spent waiting for all-reduces (overlap measure)

    # ----------------------------------------------------------------- forward
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        self._check_previous_reduction()
        if self.broadcast_buffers and self.module.training:
            with no_grad():
                for b in self.module.buffers():
                    broadcast(b, src=0)
        sync = is_grad_enabled() and self.require_backward_grad_sync and bool(self._params)
        self._reset(sync)
        output = self.module(*inputs, **kwargs)
        if sync and self.find_unused_parameters:
            reached = _leaves_reached(output)
            for i, p in enumerate(self._params):
                if id(p) not in reached:
                    self._mark_ready(i, p, used=False)
        return output

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, backward accumulates gradients locally without communicating."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    # ----------------------------------------------------------------- the reducer
    def _reset(self, sync: bool) -> None:
        self._sync = sync
        self._ready = np.zeros(len(self._params), dtype=bool)
        self._used = np.zeros(len(self._params), dtype=np.int32)
        self._next_bucket = 0
        for bucket in self._buckets:
            bucket.waiting = len(bucket.indices)
            bucket.work = None

    def _make_hook(self, index: int) -> Any:
        def hook(param: Tensor) -> None:
            if self._sync:
                self._mark_ready(index, param, used=True)

        return hook

    def _mark_ready(self, index: int, param: Tensor, used: bool) -> None:
        if self._ready[index]:
            raise RuntimeError(
                f"DistributedDataParallel: parameter {self._names[index]!r} received a gradient "
                "twice in one iteration (a second backward through the same forward?); run "
                "forward again before each backward, or wrap the extra backward in no_sync()"
            )
        self._ready[index] = True
        self._used[index] = used
        bucket_index, slot = self._place[index]
        bucket = self._buckets[bucket_index]
        view = bucket.view(slot, tuple(param.shape))
        grad = param.grad
        if grad is None:
            view[...] = 0
        else:
            data = grad._data
            view[...] = to_host(data)
        bucket.waiting -= 1
        self._launch_ready_buckets()
        if self._next_bucket == len(self._buckets):
            self._finalize()

    def _launch_ready_buckets(self) -> None:
        pg = _group.current("DistributedDataParallel")
        mpi = _group.mpi()
        while self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].waiting == 0:
            bucket = self._buckets[self._next_bucket]
            request = pg.comm.Iallreduce(mpi.IN_PLACE, bucket.buffer, mpi.SUM)
            bucket.work = Work("DistributedDataParallel all_reduce", request, pg.timeout, lambda: None)
            self._next_bucket += 1
        for bucket in self._buckets[: self._next_bucket]:
            bucket.work.is_completed()  # MPI makes progress only inside its calls

    def _finalize(self) -> None:
        start = time.perf_counter()
        for bucket in self._buckets:
            bucket.work.wait()
        used = self._used
        if self.find_unused_parameters:
            used = np.empty_like(self._used)
            comm = _group.current("DistributedDataParallel").comm
            wait_for("DistributedDataParallel find_unused_parameters", comm.Iallreduce(self._used, used, _group.mpi().SUM))
        self.comm_wait_seconds += time.perf_counter() - start
        with no_grad():
            for index, param in enumerate(self._params):
                if not used[index]:
                    continue  # no rank produced a gradient: leave .grad as it is
                bucket_index, slot = self._place[index]
                average = self._buckets[bucket_index].view(slot, tuple(param.shape)) / self._world
                _write_grad(param, average)
        self._sync = False

    def _check_previous_reduction(self) -> None:
        if self._sync and self._ready.any() and not self._ready.all():
            missing = [n for n, ready in zip(self._names, self._ready) if not ready]
            self._reset(sync=False)
            raise RuntimeError(
                "DistributedDataParallel: the previous backward did not produce gradients for "
                f"parameters {missing}, so their all-reduce never finished. Pass "
                "find_unused_parameters=True if some parameters are legitimately unused, or make "
                "sure every parameter takes part in the loss."
            )


def _make_buckets(params: list[Tensor], cap_bytes: float) -> tuple[list[_Bucket], list[tuple[int, int]]]:
    """Group parameters, last registered first, into buckets of one dtype up to `cap_bytes`
    (the first bucket up to FIRST_BUCKET_BYTES)."""
    groups: list[list[int]] = []
    size = 0.0
    for index in reversed(range(len(params))):
        p = params[index]
        nbytes = p.numel() * p._data.dtype.itemsize
        # The first bucket is small, so its all-reduce starts early in backward (PyTorch: 1 MiB).
        cap = min(cap_bytes, FIRST_BUCKET_BYTES) if len(groups) == 1 else cap_bytes
        fits = groups and size + nbytes <= cap and params[groups[-1][0]]._data.dtype == p._data.dtype
        if not fits:
            groups.append([])
            size = 0.0
        groups[-1].append(index)
        size += nbytes
    place: list[tuple[int, int]] = [(0, 0)] * len(params)
    buckets = []
    for b, indices in enumerate(groups):
        buckets.append(_Bucket(indices, [params[i] for i in indices]))
        for slot, i in enumerate(indices):
            place[i] = (b, slot)
    return buckets, place


def _write_grad(param: Tensor, average: np.ndarray) -> None:
    grad = param.grad
    data = param._data
    average = like_host(average, data)
    if grad is None:
        param.grad = Tensor._wrap(average.astype(data.dtype, copy=True), None, None)
    else:
        grad._data[...] = average
        grad._version_counter[0] += 1


def _leaves_reached(output: Any) -> set[int]:
    """ids of the leaf tensors whose AccumulateGrad the autograd graph of `output` reaches."""
    stack = [t._grad_fn for t in _tensors_in(output) if t._grad_fn is not None]
    seen: set[int] = set()
    leaves: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is AccumulateGrad:
            leaves.add(id(node.variable))
            continue
        stack.extend(n for n in node.next_nodes if n is not None)
    for t in _tensors_in(output):
        if t._grad_fn is None and t.requires_grad:
            leaves.add(id(t))
    return leaves


def _tensors_in(value: Any) -> Iterator[Tensor]:
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors_in(item)
