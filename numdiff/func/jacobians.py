"""jacrev, jacfwd and hessian: whole Jacobians from batched vjps and jvps.

jacrev maps vjp_fn over the rows of an identity: func runs once, recorded, and the rows go through
one batched reverse pass (or, where the graph holds an op whose backward does not batch, func
reruns batched over the rows; see numdiff.func.transforms.vjp);
jacfwd maps jvp over its columns (forward mode, one pass per batch of tangents: numdiff.func.forward_mode).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.creation import eye, zeros_like
from numdiff.func._pytree import tree_flatten, tree_unflatten
from numdiff.func.forward_mode import jvp
from numdiff.func.transforms import _argnums_tuple, _check_float, _Level, _split_aux, vjp
from numdiff.func.vmap import vmap
from numdiff.tensor import Tensor


def _basis(like: Tensor) -> Tensor:
    """The identity over `like`'s elements: shape (numel, *like.shape), in like's dtype."""
    n = like.numel()
    return eye(n, dtype=like.dtype, device=like.device).reshape(n, *like.shape)


def _with_args(func: Callable[..., Any], args: tuple, nums: tuple[int, ...]) -> Callable[..., Any]:
    def partial(*values: Any) -> Any:
        full = list(args)
        for n, v in zip(nums, values):
            full[n] = v
        return func(*full)

    return partial


def _shape_jacobian(rows: Tensor, out_shape: tuple, in_shape: tuple, rows_are_outputs: bool) -> Tensor:
    """(numel_out, *in) rows, or (numel_in, *out) columns, as a (*out, *in) Jacobian."""
    if rows_are_outputs:
        return rows.reshape(*out_shape, *in_shape)
    columns = rows.reshape(rows.shape[0], math.prod(out_shape)).t()  # (not -1: rows may be empty)
    return columns.reshape(*out_shape, *in_shape)


def jacrev(func: Callable[..., Any], argnums: Any = 0, *, has_aux: bool = False, chunk_size: int | None = None) -> Callable[..., Any]:
    """The Jacobian of `func` with respect to `argnums`, by reverse mode (a vmapped vjp);
    `chunk_size` pulls back that many rows at a time (less memory, same result).

    >>> numdiff.func.jacrev(numdiff.sin)(numdiff.tensor([0.0, 1.0]))
    tensor([[1.0000, 0.0000],
            [0.0000, 0.5403]])
    """

    def wrapper(*args: Any) -> Any:
        nums = _argnums_tuple(argnums, len(args), "jacrev")
        primals = [args[n] for n in nums]
        output, vjp_fn, *aux = vjp(_with_args(func, args, nums), *primals, has_aux=has_aux)
        out_leaves, out_spec = tree_flatten(output)
        per_output = []
        for j, out in enumerate(out_leaves):

            def pull(v: Tensor, j: int = j) -> tuple:
                return vjp_fn([v if k == j else zeros_like(o) for k, o in enumerate(out_leaves)])

            rows = vmap(pull, chunk_size=chunk_size)(_basis(out))
            jac = []
            for r, p in zip(rows, primals):  # a primal may be a tuple/list/dict of tensors
                (r_leaves, spec), p_leaves = tree_flatten(r), tree_flatten(p)[0]
                blocks = [_shape_jacobian(a, tuple(out.shape), tuple(b.shape), True) for a, b in zip(r_leaves, p_leaves)]
                jac.append(tree_unflatten(blocks, spec))
            per_output.append(jac[0] if isinstance(argnums, int) else tuple(jac))
        result = tree_unflatten(per_output, out_spec)
        return (result, aux[0]) if has_aux else result

    return wrapper


def jacfwd(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False, *, randomness: str = "error") -> Callable[..., Any]:
    """The Jacobian of `func` with respect to `argnums`, by forward mode (a vmapped jvp: every
    column pushed forward in one pass). `randomness` is vmap's, for random ops in `func` ('error',
    'different' or 'same').

    >>> numdiff.func.jacfwd(lambda x: x ** 2)(numdiff.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
    """

    def wrapper(*args: Any) -> Any:
        nums = _argnums_tuple(argnums, len(args), "jacfwd")
        partial = _with_args(func, args, nums)
        primals = tuple(args[n] for n in nums)
        # The output's structure, from one run that is part of the transform (backward() in it is
        # refused as in every other run).
        with no_grad(), _Level("jacfwd"):
            output, aux = _split_aux("jacfwd", partial(*primals), has_aux)
        out_leaves, out_spec = tree_flatten(output)
        flat = [tree_flatten(p) for p in primals]  # a primal may be a tuple/list/dict of tensors
        for n, (leaves, _) in zip(nums, flat):
            for leaf in leaves:
                _check_float("jacfwd", leaf, f"argument {n}")
        per_input = []
        for i, (leaves, spec) in enumerate(flat):
            blocks: list[list] = [[] for _ in out_leaves]
            for m, leaf in enumerate(leaves):

                def push(t: Tensor, i: int = i, m: int = m) -> Any:
                    tangents = tuple(
                        tree_unflatten([t if (k, n) == (i, m) else zeros_like(q) for n, q in enumerate(qs)], q_spec)
                        for k, (qs, q_spec) in enumerate(flat)
                    )
                    return jvp(partial, primals, tangents, has_aux=has_aux)[1]

                columns = tree_flatten(vmap(push, randomness=randomness)(_basis(leaf)))[0]
                for block, c, o in zip(blocks, columns, out_leaves):
                    block.append(_shape_jacobian(c, tuple(o.shape), tuple(leaf.shape), False))
            per_input.append([tree_unflatten(block, spec) for block in blocks])
        per_output = []
        for j in range(len(out_leaves)):
            jac = tuple(per_input[i][j] for i in range(len(primals)))
            per_output.append(jac[0] if isinstance(argnums, int) else jac)
        result = tree_unflatten(per_output, out_spec)
        return (result, aux) if has_aux else result

    return wrapper


def hessian(func: Callable[..., Any], argnums: Any = 0) -> Callable[..., Any]:
    """The Hessian of a scalar `func`: jacfwd(jacrev(func)), as torch.func.

    >>> numdiff.func.hessian(lambda x: (x ** 3).sum())(numdiff.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)
