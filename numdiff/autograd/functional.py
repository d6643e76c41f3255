"""The older functional API (torch.autograd.functional): jacobian, hessian, vjp, jvp, hvp, vhp.

Each is a thin layer over numdiff.func. `inputs` is a tensor or a tuple of tensors, and results
follow that structure. Results are differentiable when the inputs require grad.

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


def jacobian(
    func: Callable[..., Any],
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """d func(inputs) / d inputs, shaped output.shape + input.shape, by reverse mode or, with
    strategy="forward-mode" (which PyTorch allows only with vectorize=True), by forward mode."""
    args, single = _as_tuple(inputs, "jacobian")
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"jacobian: strategy must be 'reverse-mode' or 'forward-mode', got {strategy!r}")
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("jacobian: strategy='forward-mode' is only implemented with vectorize=True, as in PyTorch")
    transform = _func.jacfwd if strategy == "forward-mode" else _func.jacrev
    jac = transform(func, argnums=tuple(range(len(args))))(*args)
    if isinstance(jac, tuple) and jac and isinstance(jac[0], tuple):
        return tuple(_single(j, single) for j in jac)
    return _single(jac, single)


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False, vectorize: bool = False) -> Any:
    """The Hessian of a scalar func; for a tuple of inputs, a tuple of tuples of blocks."""
    args, single = _as_tuple(inputs, "hessian")
    nums = tuple(range(len(args)))
    blocks = _func.jacfwd(_func.jacrev(func, argnums=nums), argnums=nums)(*args)
    if single:
        return blocks[0][0]
    return blocks


def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), v^T J)."""
    args, single = _as_tuple(inputs, "vjp")
    out, vjp_fn = _func.vjp(func, *args)
    if v is None:
        if not (isinstance(out, Tensor) and out.numel() == 1):
            raise ValueError("vjp: v may be omitted only when func returns a single-element tensor")

        v = ones_like(out)
    return out, _single(vjp_fn(v), single)


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), J v), by forward mode (numdiff.func.jvp)."""
    args, single = _as_tuple(inputs, "jvp")
    if v is None:
        if not all(a.numel() == 1 for a in args):
            raise ValueError("jvp: v may be omitted only when every input has a single element")

        v = tuple(ones_like(a) for a in args)
    tangents, _ = _as_tuple(v, "jvp", "v")
    return _func.jvp(func, args, tangents)


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), v^T H) for a scalar func."""
    args, single = _as_tuple(inputs, "vhp")
    tangents, _ = _as_tuple(v, "vhp", "v")
    nums = tuple(range(len(args)))
    value = func(*args)
    _, product = _func.vjp(_func.grad(func, argnums=nums), *args)
    return value.detach(), _single(product(tangents), single)


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), H v) for a scalar func (forward-over-reverse)."""
    args, single = _as_tuple(inputs, "hvp")
    tangents, _ = _as_tuple(v, "hvp", "v")
    nums = tuple(range(len(args)))
    value = func(*args)
    _, product = _func.jvp(_func.grad(func, argnums=nums), args, tangents)
    return value.detach(), _single(product, single)

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
