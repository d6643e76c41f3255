"""grad, grad_and_value, vjp and jvp on numdiff's tape, with torch.func's names and semantics.

Each call is a transform level. Its differentiated inputs get fresh nodes: a new leaf
(``detach().requires_grad_()``) for an untracked input, a recorded copy for one an outer level
already tracks, so the gradient captured there reflects only this level's use. Inside vmap an
input is first made batched at every active level, so gradients come out per example. When an
outer level is active the gradients are taken with ``create_graph=True``, which is how transforms
nest through numdiff's higher-order autograd.

Forward mode (jvp, and jacfwd built on it) is numdiff.func.forward_mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numdiff import _batched
from numdiff.autograd import grad as autograd_grad
from numdiff.autograd.function import AccumulateGrad, Node
from numdiff.autograd.grad_mode import enable_grad, is_grad_enabled
from numdiff.autograd.transform_state import enter_grad_level, exit_grad_level, transforms
from numdiff.creation import ones_like
from numdiff.func._pytree import tree_flatten, tree_map, tree_unflatten
from numdiff.tensor import Tensor


class TransformOutputError(RuntimeError):
    """A transformed function returned something the transform cannot differentiate."""


def _check_float(op: str, t: Any, what: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {what} must be a Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{op}: {what} must be a floating-point tensor, got dtype {t.dtype}")
    return t


class _Level:
    """One grad-transform level: fresh input nodes in, gradients of physical tensors out."""

    def __init__(self, op: str) -> None:
        self.op = op
        self.nested = transforms.grad_depth > 0
        self.grad_enabled = is_grad_enabled()
        self.fresh: list[tuple[Tensor, list[int]]] = []

    def __enter__(self) -> _Level:
        enter_grad_level()
        return self

    def __exit__(self, *exc: Any) -> None:
        exit_grad_level()

    def track(self, t: Any, what: str) -> Tensor:
        _check_float(self.op, t, what)
        value, levels = _batched.physical(_batched.promote(t))
        if value.requires_grad:
            self.nested = True
            value = value.clone()
        else:
            # A new leaf on the same array (not detach(), which under jvp drops the tangent).
            value = Tensor._wrap(value._data, None, value._version_counter).requires_grad_()
            for sink in transforms.leaf_sinks:  # a jvp around this level made it (forward_mode.jvp)
                sink.append((value, levels))
        self.fresh.append((value, levels))
        return _batched.rewrap(value, levels)

    def note_captured(self, outputs: list) -> None:
        """Make the results differentiable when `outputs` depend on a tracked tensor that is not
        one of this level's inputs (a captured parameter), as torch.func's are inside an outer
        autograd graph: a gradient penalty backpropagates through them to that parameter."""
        if self.nested or not self.grad_enabled:
            return
        fresh = {id(value) for value, _ in self.fresh}
        stack = [o._grad_fn for o in outputs if isinstance(o, Tensor) and o._grad_fn is not None]
        seen = set()
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if type(node) is AccumulateGrad:
                if id(node.variable) not in fresh:
                    self.nested = True
                    return
                continue
            stack.extend(n for n in node.next_nodes if n is not None)

    def gradients(
        self, outputs: list, cotangents: list, inputs: list | None = None, retain: bool = False, batched: bool = False
    ) -> list:
        """d(outputs)/d(fresh inputs) given cotangents, as tensors batched like the inputs.

        `batched`: the cotangents are BatchedTensors of a vmap entered after the graph was
        recorded, and the reverse pass runs on them through batching rules. The backward formulas
        must then take their create_graph form, which computes with ops only."""
        targets = self.fresh if inputs is None else inputs
        # An output that no recorded op produced (a constant, a detached value) contributes zero.
        pairs = [(o, c) for o, c in zip(outputs, cotangents) if o._grad_fn is not None or o._requires_grad]
        grads = [None] * len(targets)
        if pairs:
            grads = autograd_grad(
                [o for o, _ in pairs],
                [value for value, _ in targets],
                grad_outputs=[c for _, c in pairs],
                retain_graph=retain or self.nested,
                create_graph=self.nested or batched,
                allow_unused=True,
            )
        results = []
        for g, (value, levels) in zip(grads, targets):
            g = value.detach() * 0 if g is None else g
            results.append(_batched.rewrap(g if self.nested else g.detach(), levels))
        return results

    def result(self, t: Any) -> Any:
        """An output handed back to the caller: detached at the top level, as torch.func."""
        if self.nested or not isinstance(t, Tensor):
            return t
        value, levels = _batched.physical(t)
        return _batched.rewrap(value.detach(), levels)


def _argnums_tuple(argnums: Any, count: int, op: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums) if isinstance(argnums, (tuple, list)) else None
    if nums is None or not nums or any(not isinstance(n, int) or isinstance(n, bool) for n in nums):
        raise TypeError(f"{op}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    for n in nums:
        if not -count <= n < count:
            raise ValueError(f"{op}: argnums {argnums!r} is out of range for {count} positional arguments")
    normalized = tuple(n % count for n in nums)
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{op}: argnums {argnums!r} names an argument more than once")
    return normalized


def _split_aux(op: str, out: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TransformOutputError(f"{op}(has_aux=True): the function must return a pair (output, aux)")
    return out


def grad_and_value(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False) -> Callable[..., Any]:
    """Like `grad`, returning ``(gradient, value)``; with has_aux, ``(gradient, (value, aux))``.

    >>> g, v = numdiff.func.grad_and_value(lambda x: (x ** 2).sum())(numdiff.tensor([1.0, 2.0]))
    """

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums_tuple(argnums, len(args), "grad")
        args = list(args)
        with _Level("grad") as level:
            specs = []
            for n in nums:
                leaves, spec = tree_flatten(args[n])
                args[n] = tree_unflatten([level.track(leaf, f"argument {n}") for leaf in leaves], spec)
                specs.append((len(leaves), spec))
            with enable_grad():
                out = func(*args, **kwargs)
            out, aux = _split_aux("grad", out, has_aux)
            level.note_captured([_batched.physical(leaf)[0] for leaf in tree_flatten((out, aux))[0]])
            if not isinstance(out, Tensor) or out.ndim != 0:
                shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
                raise TransformOutputError(
                    f"grad: the function must return a scalar (0-d) tensor, got {shape}; for a "
                    "non-scalar output use jacrev or vjp, or reduce it (e.g. .sum())"
                )
            _check_float("grad", out, "the output")
            value, _ = _batched.physical(out)
            grads = level.gradients([value], [_ones_like(value)])
            pieces = []
            start = 0
            for count, spec in specs:
                pieces.append(tree_unflatten(grads[start : start + count], spec))
                start += count
            gradient = pieces[0] if isinstance(argnums, int) else tuple(pieces)
            value_out = level.result(out)
            aux = tree_map(level.result, aux)
        if has_aux:
            return gradient, (value_out, aux)
        return gradient, value_out

    return wrapper


def grad(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of a scalar-valued `func` with respect to the arguments `argnums`.

    >>> numdiff.func.grad(lambda x: (x ** 3).sum())(numdiff.tensor([1.0, 2.0]))
    tensor([ 3., 12.])
    """
    inner = grad_and_value(func, argnums, has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        gradient, value = inner(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def _ones_like(value: Tensor) -> Tensor:
    return ones_like(value)


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``(output, vjp_fn)``: vjp_fn(cotangents) gives the cotangents pulled back to each primal.

    vjp_fn may be called several times and under vmap. A vmap over the cotangents of a vjp taken
    outside any vmap runs one batched reverse pass over the recorded graph when every op in it has
    a backward that batches (its spec's ``batched_backward``); otherwise vjp_fn reruns
    `func` batched over the cotangents.

    >>> out, vjp_fn = numdiff.func.vjp(numdiff.sin, numdiff.tensor([0.0, 1.0]))
    >>> vjp_fn(numdiff.ones(2))
    (tensor([1.0000, 0.5403]),)
    """
    depth_at_call = transforms.vmap_depth
    with _Level("vjp") as level:
        fresh, specs = _track_primals(level, primals)
        with enable_grad():
            out = func(*fresh)
        out, aux = _split_aux("vjp", out, has_aux)
        out_leaves, out_spec = tree_flatten(out)
        for leaf in out_leaves:
            _check_float("vjp", leaf, "each output")
        level.note_captured([_batched.physical(leaf)[0] for leaf in tree_flatten((out, aux))[0]])
        inputs = list(level.fresh)

    def vjp_fn(cotangents: Any) -> tuple:
        cot_leaves = tree_flatten(cotangents)[0]
        if len(cot_leaves) != len(out_leaves):
            raise ValueError(f"vjp_fn: expected {len(out_leaves)} cotangents (one per output), got {len(cot_leaves)}")
        for c, o in zip(cot_leaves, out_leaves):
            if not isinstance(c, Tensor) or tuple(c.shape) != tuple(o.shape):
                shape = tuple(c.shape) if isinstance(c, Tensor) else type(c).__name__
                raise ValueError(f"vjp_fn: a cotangent of shape {shape} does not match its output of shape {tuple(o.shape)}")
        if any(_batched.level_of(c) > depth_at_call for c in cot_leaves):
            if depth_at_call == 0 and _backward_runs_batched(out_leaves):
                # One reverse pass over the recorded graph, with the batch of cotangents.
                with _Level("vjp") as again:
                    again.nested = level.nested or transforms.grad_depth > 1
                    return _regroup(again.gradients(out_leaves, cot_leaves, inputs=inputs, retain=True, batched=True), specs)
            return _vjp_rerun(func, primals, cot_leaves, has_aux)
        values = [_batched.physical(o)[0] for o in out_leaves]
        cot_values = [_batched.physical(_batched.promote(c))[0] for c in cot_leaves]
        cot_values = [c.expand(*v.shape) for c, v in zip(cot_values, values)]
        with _Level("vjp") as again:
            again.nested = level.nested or transforms.grad_depth > 1
            return _regroup(again.gradients(values, cot_values, inputs=inputs, retain=True), specs)

    result = tree_unflatten([level.result(o) for o in out_leaves], out_spec)
    return (result, vjp_fn, tree_map(level.result, aux)) if has_aux else (result, vjp_fn)


def _track_primals(level: _Level, primals: tuple) -> tuple[list, list]:
    """Each primal (a tensor, or a tuple/list/dict of them) with fresh nodes for its tensors, and
    (leaf count, spec) per primal for `_regroup`."""
    fresh, specs = [], []
    for i, primal in enumerate(primals):
        leaves, spec = tree_flatten(primal)
        fresh.append(tree_unflatten([level.track(leaf, f"primal {i}") for leaf in leaves], spec))
        specs.append((len(leaves), spec))
    return fresh, specs


def _regroup(flat: list, specs: list) -> tuple:
    """Per-tensor results rebuilt into one structure per primal (the inverse of _track_primals)."""
    pieces, start = [], 0
    for count, spec in specs:
        pieces.append(tree_unflatten(flat[start : start + count], spec))
        start += count
    return tuple(pieces)


def _backward_runs_batched(outputs: list) -> bool:
    """Whether every op recorded between `outputs` and the leaves has a backward that batches
    (its spec's ``batched_backward``, attached by numdiff.func._batch_rules), and no tensor on the
    way retains its gradient (a batched gradient must not land in a `.grad` outside the vmap)."""
    stack = [o._grad_fn for o in outputs if o._grad_fn is not None]
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        spec = getattr(node.function, "spec", None)
        if spec is None or not spec.batched_backward or node._retained is not None:
            return False
        stack.extend(n for n in node.next_nodes if type(n) is Node)
    return True


def _vjp_rerun(func: Callable[..., Any], primals: tuple, cotangents: list, has_aux: bool = False) -> tuple:
    """vjp_fn with cotangents batched by a vmap entered after vjp: run func again, batched."""

    def dot(*p: Any) -> Tensor:
        outs = tree_flatten(_split_aux("vjp", func(*p), has_aux)[0])[0]
        total = None
        for o, c in zip(outs, cotangents):
            term = (o * c).sum()
            total = term if total is None else total + term
        return total

    return grad(dot, argnums=tuple(range(len(primals))))(*primals)
