"""The older functional API (torch.autograd.functional): jacobian, hessian, vjp, jvp, hvp, vhp.

Each is a thin layer over numdiff.func. `inputs` is a tensor or a tuple of tensors, and results
follow that structure. As in PyTorch, results are detached unless `create_graph=True`; then
they are differentiable where the inputs require grad.

>>> numdiff.autograd.functional.jacobian(numdiff.exp, numdiff.zeros(2))
tensor([[1., 0.],
        [0., 1.]])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numdiff import func as _func
from numdiff.creation import ones_like
from numdiff.tensor import Tensor


def _as_tuple(inputs: Any, op: str, name: str = "inputs") -> tuple[tuple, bool]:
    if isinstance(inputs, Tensor):
        return (inputs,), True
    if isinstance(inputs, (tuple, list)) and all(isinstance(t, Tensor) for t in inputs):
        return tuple(inputs), False
    raise TypeError(f"{op}: {name} must be a Tensor or a tuple of Tensors, got {type(inputs).__name__}")


def _single(values: tuple, single: bool) -> Any:
    return values[0] if single else values


def _graph_or_detached(result: Any, create_graph: bool) -> Any:
    """`result` (a tensor, or nested tuples of them) as it is under create_graph=True, else every
    tensor in it detached, as PyTorch returns them: `jacobian(f, x).numpy()` works on an x that
    requires grad."""
    if create_graph:
        return result
    if isinstance(result, Tensor):
        return result.detach()
    if isinstance(result, tuple):
        return tuple(_graph_or_detached(r, create_graph) for r in result)
    return result


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """d func(inputs) / d inputs, shaped output.shape + input.shape; `strategy` "reverse-mode"
    (jacrev) or "forward-mode" (jacfwd: fewer passes when func has more outputs than inputs)."""
    transform = _strategy("jacobian", "strategy", strategy)
    if transform is _func.jacfwd and not vectorize:
        raise NotImplementedError('jacobian: strategy="forward-mode" is only implemented with vectorize=True, as in PyTorch')
    if transform is _func.jacfwd and create_graph:
        raise NotImplementedError(
            'jacobian: create_graph=True and strategy="forward-mode" are not supported together (as in '
            'PyTorch); set create_graph=False or strategy="reverse-mode"'
        )
    args, single = _as_tuple(inputs, "jacobian")
    jac = transform(func, argnums=tuple(range(len(args))))(*args)
    if isinstance(jac, tuple) and jac and isinstance(jac[0], tuple):
        return _graph_or_detached(tuple(_single(j, single) for j in jac), create_graph)
    return _graph_or_detached(_single(jac, single), create_graph)


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar func; for a tuple of inputs, a tuple of tuples of blocks. The outer
    jacobian is taken forward over the inner reverse one whatever `outer_jacobian_strategy` names
    (it is checked as PyTorch checks it): the same matrix, in one pass per input element."""
    _strategy("hessian", "outer_jacobian_strategy", outer_jacobian_strategy)
    args, single = _as_tuple(inputs, "hessian")
    nums = tuple(range(len(args)))
    blocks = _func.jacfwd(_func.jacrev(func, argnums=nums), argnums=nums)(*args)
    return _graph_or_detached(blocks[0][0] if single else blocks, create_graph)


def _strategy(op: str, name: str, strategy: Any) -> Callable[..., Any]:
    """The transform that `strategy` names: jacrev for "reverse-mode", jacfwd for "forward-mode"."""
    if strategy == "reverse-mode":
        return _func.jacrev
    if strategy == "forward-mode":
        return _func.jacfwd
    raise ValueError(f'{op}: {name} must be "forward-mode" or "reverse-mode", got {strategy!r}')


def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), v^T J)."""
    args, single = _as_tuple(inputs, "vjp")
    out, vjp_fn = _func.vjp(func, *args)
    if v is None:
        if not (isinstance(out, Tensor) and out.numel() == 1):
            raise ValueError("vjp: v may be omitted only when func returns a single-element tensor")

        v = ones_like(out)
    return _graph_or_detached((out, _single(vjp_fn(v), single)), create_graph)


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), J v), by forward mode (numdiff.func.jvp)."""
    args, single = _as_tuple(inputs, "jvp")
    if v is None:
        if not all(a.numel() == 1 for a in args):
            raise ValueError("jvp: v may be omitted only when every input has a single element")

        v = tuple(ones_like(a) for a in args)
    tangents, _ = _as_tuple(v, "jvp", "v")
    return _graph_or_detached(_func.jvp(func, args, tangents), create_graph)


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), v^T H) for a scalar func."""
    args, single = _as_tuple(inputs, "vhp")
    tangents, _ = _as_tuple(v, "vhp", "v")
    nums = tuple(range(len(args)))
    value = func(*args)
    _, product = _func.vjp(_func.grad(func, argnums=nums), *args)
    return _graph_or_detached((value, _single(product(tangents), single)), create_graph)


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), H v) for a scalar func (forward-over-reverse)."""
    args, single = _as_tuple(inputs, "hvp")
    tangents, _ = _as_tuple(v, "hvp", "v")
    nums = tuple(range(len(args)))
    value = func(*args)
    _, product = _func.jvp(_func.grad(func, argnums=nums), args, tangents)
    return _graph_or_detached((value, _single(product, single)), create_graph)

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
