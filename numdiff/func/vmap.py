"""vmap: run a per-example function over a batch with batching rules, not a Python loop."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from numdiff.autograd.transform_state import transforms
from numdiff.func import _batched
from numdiff.func._pytree import tree_flatten, tree_unflatten
from numdiff.tensor import Tensor

_RANDOMNESS = ("error", "same")


class VmapRandomnessError(RuntimeError):
    """A random op ran inside vmap(randomness='error')."""


def _dims_per_leaf(in_dims: Any, args: tuple) -> list:
    """in_dims broadcast over the args' leaves: an int/None for all, or one entry per argument."""
    if in_dims is None or isinstance(in_dims, int):
        return [in_dims] * len(tree_flatten(args)[0])
    if not isinstance(in_dims, (tuple, list)) or len(in_dims) != len(args):
        raise ValueError(
            f"vmap: in_dims must be an int, None, or a tuple with one entry per argument; got in_dims="
            f"{in_dims!r} for {len(args)} positional arguments"
        )
    dims = []
    for arg, dim in zip(args, in_dims):
        leaves = tree_flatten(arg)[0]
        if dim is None or isinstance(dim, int):
            dims.extend([dim] * len(leaves))
        else:
            sub = tree_flatten(dim)[0]
            if len(sub) != len(leaves):
                raise ValueError(f"vmap: in_dims entry {dim!r} does not match the structure of its argument")
            dims.extend(sub)
    return dims


def _move_to_front(t: Tensor, dim: int) -> Tensor:
    if dim == 0:
        return t
    order = list(range(t.ndim))
    order.insert(0, order.pop(dim))
    return t.permute(*order)


def _move_from_front(value: Tensor, dim: int) -> Tensor:
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
) -> Callable[..., Any]:
    """`func` mapped over a batch dimension of its inputs, as torch.func.vmap.

    Each op runs once on the whole batch through its batching rule; an op without one runs per
    example (with a one-time VmapPerformanceWarning naming it). Transforms nest: vmap(grad(f)),
    vmap(jacrev(f)), vmap(vmap(f)). randomness: 'error' (a random op raises) or 'same' (one draw
    shared by the batch); torch's 'different' is not offered.

    >>> x = numdiff.randn(8, 3); w = numdiff.randn(3)
    >>> numdiff.func.vmap(numdiff.dot, in_dims=(0, None))(x, w).shape
    numdiff.Size([8])
    """
    if randomness not in _RANDOMNESS:
        raise ValueError(f"vmap: randomness must be one of {_RANDOMNESS}, got {randomness!r}")

    @functools.wraps(func)
    def batched_func(*args: Any, **kwargs: Any) -> Any:
        leaves, spec = tree_flatten(args)
        dims = _dims_per_leaf(in_dims, args)
        size = None
        sizes = []
        for index, (leaf, dim) in enumerate(zip(leaves, dims)):
            if dim is None:
                continue
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
        level = transforms.vmap_depth + 1
        mapped = [
            leaf if dim is None else _batched.wrap(_move_to_front(leaf, dim % leaf.ndim), level)
            for leaf, dim in zip(leaves, dims)
        ]
        transforms.batch_sizes.append(size)
        transforms.vmap_depth = level
        transforms.batched_apply = _batched.batched_apply
        previous_randomness = transforms.randomness
        transforms.randomness = randomness
        try:
            out = func(*tree_unflatten(mapped, spec), **kwargs)
        finally:
            transforms.vmap_depth = level - 1
            transforms.batch_sizes.pop()
            transforms.randomness = previous_randomness
        return _unbatch_outputs(out, out_dims, level, size)

    return batched_func


def _unbatch_outputs(out: Any, out_dims: Any, level: int, size: int) -> Any:
    leaves, spec = tree_flatten(out)
    dims = [out_dims] * len(leaves) if out_dims is None or isinstance(out_dims, int) else tree_flatten(out_dims)[0]
    if len(dims) != len(leaves):
        raise ValueError(f"vmap: out_dims {out_dims!r} does not match the {len(leaves)} outputs")
    results = []
    for leaf, dim in zip(leaves, dims):
        if not isinstance(leaf, Tensor):
            raise ValueError(f"vmap: the function must return tensors, got a {type(leaf).__name__}")
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
