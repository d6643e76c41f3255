"""torch.func's remaining transforms: linearize, functionalize and replace_all_batch_norm_modules_."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from numdiff.func._pytree import tree_flatten
from numdiff.func.forward_mode import jvp
from numdiff.nn.modules.normalization import _BatchNorm, _InstanceNorm
from numdiff.tensor import Tensor

__all__ = ["functionalize", "linearize", "replace_all_batch_norm_modules_"]

_REMOVE = ("mutations", "mutations_and_views")


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``(func(*primals), jvp_fn)``: jvp_fn(*tangents) is the Jacobian of `func` at `primals`
    times the tangents, as torch.func.linearize (each call is one forward-mode pass).

    >>> out, jvp_fn = numdiff.func.linearize(numdiff.sin, numdiff.tensor([0.0, 1.0]))
    >>> jvp_fn(numdiff.ones(2))
    tensor([1.0000, 0.5403])
    """
    primal_leaves = tree_flatten(primals)[0]
    for index, leaf in enumerate(primal_leaves):
        if not isinstance(leaf, Tensor):
            raise TypeError(f"linearize: the primals must be tensors, got a {type(leaf).__name__} at position {index}")
    output = func(*primals)

    def jvp_fn(*tangents: Any) -> Any:
        tangent_leaves = tree_flatten(tangents)[0]
        if len(tangent_leaves) != len(primal_leaves):
            raise ValueError(
                f"linearize: jvp_fn expected {len(primal_leaves)} tangents (one per primal), got {len(tangent_leaves)}"
            )
        for index, (tangent, primal) in enumerate(zip(tangent_leaves, primal_leaves)):
            if not isinstance(tangent, Tensor) or tuple(tangent.shape) != tuple(primal.shape):
                got = tuple(tangent.shape) if isinstance(tangent, Tensor) else type(tangent).__name__
                raise ValueError(
                    f"linearize: jvp_fn's tangent {index} has shape {got}, but its primal has shape {tuple(primal.shape)}"
                )
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """`func` as torch.func.functionalize gives it back: the same outputs, and the same in-place
    updates of its inputs.

    PyTorch's functionalize rewrites in-place ops and views as out-of-place ones, for graph
    capture (make_fx, export). numdiff runs eagerly and differentiates through in-place ops and
    views as they are, so the function's observable behaviour is all there is to keep, and the
    function runs unchanged.

    >>> numdiff.func.functionalize(lambda x: x.add_(1))(numdiff.zeros(2))
    tensor([1., 1.])
    """
    if remove not in _REMOVE:
        raise ValueError(f"functionalize: remove must be one of {_REMOVE}, got {remove!r}")
    if not callable(func):
        raise TypeError(f"functionalize: expected a callable, got a {type(func).__name__}")

    @functools.wraps(func)
    def functionalized(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return functionalized


def replace_all_batch_norm_modules_(root: Any) -> Any:
    """Make every batch norm module under `root` (itself included) normalise by the batch's own
    statistics and keep no running statistics, in place, as torch.func's (what vmap over a
    model with BatchNorm needs). Returns `root`.

    >>> net = numdiff.func.replace_all_batch_norm_modules_(numdiff.nn.BatchNorm1d(3))
    >>> net.running_mean is None
    True
    """
    if not hasattr(root, "modules"):
        raise TypeError(f"replace_all_batch_norm_modules_: expected an nn.Module, got a {type(root).__name__}")
    for module in root.modules():
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
