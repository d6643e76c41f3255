"""vmap: run a per-example function over a batch with batching rules, not a Python loop."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from numdiff import _batched
from numdiff._batched import VmapRandomnessError
from numdiff._random import SameDrawReplay
from numdiff._vmap_level import VmapLevel
from numdiff.autograd.transform_state import interpreting, transforms
from numdiff.func import _batch_rules as _batch_rules  # attaches every op's batching rule to its spec
from numdiff.func._pytree import tree_flatten, tree_unflatten
from numdiff.tensor import Tensor

_RANDOMNESS = ("error", "different", "same")
__all__ = ["VmapRandomnessError", "vmap"]


def _dims_per_leaf(in_dims: Any, args: tuple) -> list:
    """in_dims broadcast over the args' leaves: an int/None for all, or one entry per argument."""
    if in_dims is None or isinstance(in_dims, int):
        return [in_dims] * len(tree_flatten(args)[0])
    if not isinstance(in_dims, (tuple, list)) or len(in_dims) != len(args):
        raise ValueError(
            f"vmap: in_dims must be an int, None, or a tuple with one entry per argument; got in_dims="
            f"{in_dims!r} for {len(args)} positional arguments"
        )
    return [d for arg, dim in zip(args, in_dims) for d in _prefix_dims(dim, arg, "in_dims")]


def _move_to_front(t: Tensor, dim: int) -> Tensor:
    if dim == 0:
        return t
    order = list(range(t.ndim))
    order.insert(0, order.pop(dim))
    return t.permute(*order)


def _move_from_front(value: Tensor, dim: int) -> Tensor:
    if not -value.ndim <= dim < value.ndim:
        raise ValueError(
            f"vmap: out_dim {dim} is out of range for an output of shape {tuple(value.shape[1:])} "
            f"(with the batch dim it has {value.ndim} dims: out_dim must be in [{-value.ndim}, {value.ndim - 1}])"
        )
    dim = dim % value.ndim
    if dim == 0:
        return value
    order = list(range(1, value.ndim))
    order.insert(dim, 0)
    return value.permute(*order)


def vmap(
    func: Callable[..., Any],
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable[..., Any]:
    """`func` mapped over a batch dimension of its inputs, as torch.func.vmap.

    Each op runs once on the whole batch through its batching rule; an op without one runs per
    example (with a one-time VmapPerformanceWarning naming it). Transforms nest: vmap(grad(f)),
    vmap(jacrev(f)), vmap(vmap(f)). randomness, for the random ops (rand, randn, randint, randperm,
    their _like forms, multinomial, dropout, uniform_, normal_): 'error' (a random op raises),
    'different' (an independent draw per batch entry) or 'same' (one draw shared by the batch; a
    random op whose own input is batched then raises, as in torch.func). Each level of nested vmaps
    keeps its own mode. chunk_size runs the batch in slices of that many entries (less memory, same
    result; with 'different', other draws; with 'same', every chunk replays the first chunk's draws).

    >>> x = numdiff.randn(8, 3); w = numdiff.randn(3)
    >>> numdiff.func.vmap(numdiff.dot, in_dims=(0, None))(x, w).shape
    numdiff.Size([8])
    """
    if randomness not in _RANDOMNESS:
        raise ValueError(f"vmap: randomness must be one of {_RANDOMNESS}, got {randomness!r}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size must be a positive int or None, got {chunk_size!r}")

    @functools.wraps(func)
    def batched_func(*args: Any, **kwargs: Any) -> Any:
        leaves, spec = tree_flatten(args)
        dims = _dims_per_leaf(in_dims, args)
        size = None
        sizes = []
        for index, (leaf, dim) in enumerate(zip(leaves, dims)):
            if dim is None:
                continue
            if not isinstance(dim, int) or isinstance(dim, bool):
                raise TypeError(f"vmap: in_dims must be ints or None, got {dim!r} for input {index} (in_dims={in_dims!r})")
            if not isinstance(leaf, Tensor):
                raise ValueError(f"vmap: in_dims gives dim {dim} for input {index}, which is a {type(leaf).__name__}, not a Tensor")
            if not -leaf.ndim <= dim < max(leaf.ndim, 1) or leaf.ndim == 0:
                raise ValueError(f"vmap: in_dim {dim} is out of range for input {index} of shape {tuple(leaf.shape)}")
            sizes.append((index, tuple(leaf.shape), leaf.shape[dim]))
            size = leaf.shape[dim] if size is None else size
        if size is None:
            raise ValueError("vmap: no input is batched (every in_dim is None); at least one input needs a batch dim")
        if any(s != size for _, _, s in sizes):
            listing = ", ".join(f"input {i} of shape {shape} has size {s}" for i, shape, s in sizes)
            raise ValueError(f"vmap: the batched inputs have different sizes along their in_dims: {listing}")
        if chunk_size is not None and size > chunk_size:
            replay = SameDrawReplay() if randomness == "same" else None
            if replay is not None:
                transforms.same_draw_replays.append(replay)
            try:
                chunks = []
                for start in range(0, size, chunk_size):
                    stop = min(start + chunk_size, size)
                    sliced = [leaf if dim is None else _narrow(leaf, dim % leaf.ndim, start, stop) for leaf, dim in zip(leaves, dims)]
                    if replay is not None:
                        replay.next_chunk()
                    chunks.append(_run_batch(func, sliced, dims, spec, kwargs, stop - start, out_dims, randomness))
            finally:
                if replay is not None:
                    transforms.same_draw_replays.remove(replay)
            return _concatenate(chunks, out_dims)
        return _run_batch(func, leaves, dims, spec, kwargs, size, out_dims, randomness)

    return batched_func


def _run_batch(func: Callable[..., Any], leaves: list, dims: list, spec: Any, kwargs: dict, size: int, out_dims: Any, randomness: str) -> Any:
    """One run of `func` over one batch (or one chunk of it) as a new vmap level."""
    level = transforms.vmap_depth + 1
    mapped = [
        leaf if dim is None else _batched.wrap(_move_to_front(leaf, dim % leaf.ndim), level)
        for leaf, dim in zip(leaves, dims)
    ]
    state = transforms  # this thread's: a vmap in another thread never sees this level
    state.batch_sizes.append(size)
    state.vmap_depth = level
    state.randomness.append(randomness)
    try:
        with interpreting(VmapLevel(randomness, level)):
            out = func(*tree_unflatten(mapped, spec), **kwargs)
    finally:
        state.vmap_depth = level - 1
        state.batch_sizes.pop()
        state.randomness.pop()
    return _unbatch_outputs(out, out_dims, level, size)


def _narrow(t: Tensor, dim: int, start: int, stop: int) -> Tensor:
    return t[(slice(None),) * dim + (slice(start, stop),)]


def _prefix_dims(dims: Any, tree: Any, what: str) -> list:
    """in_dims or out_dims (`what`) matched to a structure of tensors, one entry per leaf: an int or
    None stands for every leaf below it (out_dims=(1, 0) with an output (a, (b, c)) gives a 1 and
    b and c 0), as torch.func."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(tree_flatten(tree)[0])
    if not isinstance(dims, (tuple, list, dict)):
        raise TypeError(f"vmap: {what} must be ints or None, got {dims!r}")
    matches = (
        isinstance(dims, dict) and isinstance(tree, dict) and sorted(dims) == sorted(tree)
        or isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)) and len(dims) == len(tree)
    )
    if not matches:
        owner = "the function's output" if what == "out_dims" else "its argument"
        raise ValueError(
            f"vmap: {what} {dims!r} does not match the structure of {owner}: give an int or None for each "
            "tensor, or for a group of them"
        )
    if isinstance(tree, dict):
        return [d for key in tree for d in _prefix_dims(dims[key], tree[key], what)]
    return [d for sub_dims, sub in zip(dims, tree) for d in _prefix_dims(sub_dims, sub, what)]


def _out_dims_per_leaf(out_dims: Any, out: Any) -> list:
    if isinstance(out_dims, tuple) and len(out_dims) == 1 and not isinstance(out, (tuple, list, dict)):
        out_dims = out_dims[0]  # (torch.func reads a 1-tuple as the out_dim of a single output)
    return _prefix_dims(out_dims, out, "out_dims")


def _concatenate(chunks: list, out_dims: Any) -> Any:
    """The chunks' outputs joined along their out_dims (outputs with out_dim None from the first)."""
    from numdiff.ops.joining import cat

    flat = [tree_flatten(chunk)[0] for chunk in chunks]
    spec = tree_flatten(chunks[0])[1]
    dims = _out_dims_per_leaf(out_dims, chunks[0])
    joined = [
        flat[0][i] if dim is None else cat([pieces[i] for pieces in flat], dim)
        for i, dim in enumerate(dims)
    ]
    return tree_unflatten(joined, spec)


def _unbatch_outputs(out: Any, out_dims: Any, level: int, size: int) -> Any:
    leaves, spec = tree_flatten(out)
    dims = _out_dims_per_leaf(out_dims, out)
    results = []
    for leaf, dim in zip(leaves, dims):
        if not isinstance(leaf, Tensor):
            raise ValueError(f"vmap: the function must return tensors, got a {type(leaf).__name__}")
        if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool)):
            raise TypeError(f"vmap: out_dims must be ints or None, got {dim!r} in out_dims={out_dims!r}")
        value, is_batched = _batched.unwrap_level(leaf, level)
        if dim is None:
            if is_batched:
                raise ValueError("vmap: an output with out_dims None is batched; it must not depend on the batched inputs")
            results.append(leaf)
            continue
        if not is_batched:
            value = value.unsqueeze(0).expand(size, *value.shape)
        results.append(_move_from_front(value, dim))
    return tree_unflatten(results, spec)
