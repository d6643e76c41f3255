"""Forward mode: jvp, by the jvp interpreter level (numdiff.func._forward), and its fallback.

jvp pushes a `JvpLevel`, gives each primal a tangent there and runs the function: every op's output
gets its tangent in the same pass, from the op's rule where it has one (numdiff.func._jvp_rules)
and by a double vjp of that one op where it has none. A function that updates a view in place is
run again by the double-vjp construction over the whole function (`_jvp_by_double_vjp`): with a
dummy cotangent u, g(u) = J^T u is linear in u, and the vjp of g with the tangent t is J t; the
tape replays views after in-place updates, which the tangents kept by storage cannot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numdiff import _batched
from numdiff.autograd import grad as autograd_grad
from numdiff.autograd.grad_mode import enable_grad
from numdiff.autograd.transform_state import interpreting, transforms
from numdiff.creation import zeros_like
from numdiff.func._forward import ForwardModeRerun, JvpLevel
from numdiff.func._pytree import tree_flatten, tree_map, tree_unflatten
from numdiff.func.transforms import _check_float, _Level, _split_aux, _track_primals


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, has_aux: bool = False) -> Any:
    """``(output, jvp_out)``: the Jacobian of `func` at `primals` times `tangents`, in one forward
    pass (see the module docstring). Transforms nest: jvp of grad, grad of jvp, vmap of jvp.

    >>> numdiff.func.jvp(numdiff.sin, (numdiff.tensor([0.0]),), (numdiff.tensor([2.0]),))
    (tensor([0.]), tensor([2.]))
    """
    tangent_leaves = _checked_tangents(primals, tangents)
    try:
        return _jvp_forward(func, primals, tangent_leaves, has_aux)
    except ForwardModeRerun:
        return _jvp_by_double_vjp(func, primals, tangent_leaves, has_aux)


def _checked_tangents(primals: Any, tangents: Any) -> list:
    """The tangents' tensors, in the order of the primals' (checked to match them)."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise TypeError("jvp: primals and tangents must be tuples (of tensors, or tuples/lists/dicts of them)")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: got {len(primals)} primals but {len(tangents)} tangents")
    tangent_leaves = []
    for i, (p, t) in enumerate(zip(primals, tangents)):
        (p_leaves, p_spec), (t_leaves, t_spec) = tree_flatten(p), tree_flatten(t)
        if p_spec != t_spec:
            raise ValueError(f"jvp: tangent {i} does not have the structure of its primal")
        for p_leaf, t_leaf in zip(p_leaves, t_leaves):
            _check_float("jvp", p_leaf, f"primal {i}")
            _check_float("jvp", t_leaf, f"tangent {i}")
            if tuple(p_leaf.shape) != tuple(t_leaf.shape):
                raise ValueError(
                    f"jvp: tangent {i} of shape {tuple(t_leaf.shape)} does not match its primal of shape {tuple(p_leaf.shape)}"
                )
        tangent_leaves.extend(t_leaves)

    return tangent_leaves


def _jvp_forward(func: Callable[..., Any], primals: tuple, tangent_leaves: list, has_aux: bool) -> Any:
    level = JvpLevel()
    # A grad-transform level too: a grad inside records its backward (create_graph), so the
    # backward's ops come through this level and the gradient gets its tangent (jvp of grad).
    made_here: list = []
    with _Level("jvp") as grad_level:
        duals, remaining = [], iter(tangent_leaves)
        for primal in primals:
            leaves, spec = tree_flatten(primal)
            # A view of each primal: storage of its own, so that a tensor passed twice may carry
            # two tangents.
            aliases = [leaf[...] for leaf in leaves]
            for alias in aliases:
                level.set_tangent(alias, next(remaining))
            duals.append(tree_unflatten(aliases, spec))
        transforms.leaf_sinks.append(made_here)
        try:
            with interpreting(level):
                out = func(*duals)
        finally:
            transforms.leaf_sinks.remove(made_here)
        out, aux = _split_aux("jvp", out, has_aux)
        out_leaves, out_spec = tree_flatten(out)
        for leaf in out_leaves:
            _check_float("jvp", leaf, "each output")
        pushed = [level.tangent_of(o) for o in out_leaves]
        pushed = [zeros_like(o) if p is None else p for o, p in zip(out_leaves, pushed)]
        # Results stay differentiable only in what an outer level or the caller tracks: the
        # leaves that grad levels inside made do not count.
        grad_level.fresh = made_here
        grad_level.note_captured([_batched.physical(t)[0] for t in tree_flatten((out_leaves, pushed, aux))[0]])
        out_leaves, pushed = [grad_level.result(o) for o in out_leaves], [grad_level.result(p) for p in pushed]
        aux = tree_map(grad_level.result, aux)
    outputs, tangents_out = tree_unflatten(out_leaves, out_spec), tree_unflatten(pushed, out_spec)
    return (outputs, tangents_out, aux) if has_aux else (outputs, tangents_out)


def _jvp_by_double_vjp(func: Callable[..., Any], primals: tuple, tangent_leaves: list, has_aux: bool) -> Any:
    """jvp by two reverse passes over the whole function (see the module docstring)."""
    with _Level("jvp") as level:
        fresh, _ = _track_primals(level, primals)
        with enable_grad():
            out = func(*fresh)
        out, aux = _split_aux("jvp", out, has_aux)
        out_leaves, out_spec = tree_flatten(out)
        values = [_batched.physical(_check_float("jvp", o, "each output"))[0] for o in out_leaves]
        level.note_captured(values + [_batched.physical(leaf)[0] for leaf in tree_flatten(aux)[0]])
        dummies = [zeros_like(v).requires_grad_() for v in values]
        # An output that no recorded op produced (a constant, a detached value) has tangent zero.
        tracked = [k for k, v in enumerate(values) if v._grad_fn is not None or v._requires_grad]
        pulled = [None] * len(level.fresh)
        if tracked:
            with enable_grad():
                pulled = autograd_grad(
                    [values[k] for k in tracked], [v for v, _ in level.fresh],
                    grad_outputs=[dummies[k] for k in tracked], create_graph=True, allow_unused=True,
                )  # fmt: skip
        used = [(g, t) for g, t in zip(pulled, tangent_leaves) if g is not None]
        tangent_values = [_batched.physical(_batched.promote(t))[0] for _, t in used]
        if used:
            pushed = autograd_grad(
                [g for g, _ in used],
                dummies,
                grad_outputs=[t.expand(*g.shape) for (g, _), t in zip(used, tangent_values)],
                create_graph=level.nested,
                allow_unused=True,
            )
        else:
            pushed = [None] * len(values)
        results = []
        for p, v, o in zip(pushed, values, out_leaves):
            p = v.detach() * 0 if p is None else p
            _, levels = _batched.physical(o)
            results.append(level.result(_batched.rewrap(p if level.nested else p.detach(), levels)))
        outputs = tree_unflatten([level.result(o) for o in out_leaves], out_spec)
        tangents_out = tree_unflatten(results, out_spec)
        aux = tree_map(level.result, aux)
    return (outputs, tangents_out, aux) if has_aux else (outputs, tangents_out)
