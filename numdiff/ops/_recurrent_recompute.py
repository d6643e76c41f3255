"""The recurrent sequence ops' second derivatives, by recomputation: each recurrence written in
numdiff ops (``lstm_recurrence``, ``gru_recurrence``, ``rnn_recurrence``), with zero perturbations
where each step reads its state, so that the gradients the backward kernel computes come out as
differentiable tensors (``recomputed_streams``) and the backward ops of numdiff.ops.recurrent can be
differentiated exactly (``backward_of_backward``). Nothing here runs on a first-order backward.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numdiff.autograd import grad as autograd_grad
from numdiff.autograd.grad_mode import enable_grad, is_grad_enabled
from numdiff.ops.joining import cat, stack
from numdiff.tensor import Tensor

__all__ = ["backward_of_backward", "flat", "gru_recurrence", "lstm_recurrence", "recomputed_streams", "rnn_recurrence"]


def flat(*streams: Tensor) -> Tensor:
    """The blocks of a backward op's result laid end to end, from differentiable tensors."""
    return cat([s.reshape(-1) for s in streams], 0)


def recomputed_streams(recurrence: Callable[..., Tensor], grad: Tensor, inputs: list[Tensor | None], extra: int) -> tuple:
    """The backward ops' own backward: rebuild the forward from numdiff ops with zero
    perturbations added where each step reads its state (and GRU's hn), take the gradients the
    kernel computes (d projected, d perturbations) as differentiable tensors, and differentiate
    them. The caller gives out None: its dependence on the inputs is in the recomputation."""
    create_graph = is_grad_enabled()
    leaves = [
        None if t is None else (t if create_graph and t.requires_grad else t.detach().requires_grad_())
        for t in [grad, *inputs]
    ]
    seed, projected, rest = leaves[0], leaves[1], leaves[2:]
    steps, batch = projected.shape[:2]
    hidden = rest[0].shape[-1]
    with enable_grad():
        zeros = [projected.new_zeros((steps, batch, hidden)).requires_grad_() for _ in range(extra)]
        out = recurrence(projected, *rest, *zeros)
        streams = autograd_grad(out, [projected, *zeros], seed, create_graph=True)
        return streams, leaves, create_graph


def backward_of_backward(recurrence: Callable[..., Tensor], ctx: Any, grad_res: Tensor, extra: int, split: Callable) -> tuple:
    grad, _out, *inputs = ctx.saved_tensors
    streams, leaves, create_graph = recomputed_streams(recurrence, grad, inputs, extra)
    wanted = [leaf for leaf in leaves if leaf is not None]
    with enable_grad():
        res = split(*streams)
        found = autograd_grad(res, wanted, grad_res, create_graph=create_graph, allow_unused=True)
    by_leaf = dict(zip(map(id, wanted), found))
    grads = [by_leaf.get(id(leaf)) if leaf is not None else None for leaf in leaves]
    grads.insert(1, None)
    return tuple(g if need else None for g, need in zip(grads, ctx.needs_input_grad))


def lstm_recurrence(projected: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor, dh: Tensor | None = None, dc: Tensor | None = None) -> Tensor:
    """lstm_sequence's output from numdiff ops (dh, dc: perturbations of each step's incoming state)."""
    h, c, w_t, steps = h0, c0, w_hh.t(), []
    for t in range(projected.shape[0]):
        if dh is not None:
            h, c = h + dh[t], c + dc[t]
        i, f, g, o = (projected[t] + h @ w_t).chunk(4, -1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c = f * c + i * g
        h = o * c.tanh()
        steps.append(h)
    return stack([*steps, c], 0)


def gru_recurrence(projected: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Tensor | None, dh: Tensor | None = None, dhn: Tensor | None = None) -> Tensor:
    """gru_sequence's output from numdiff ops (dh, dhn: perturbations of h_{t-1} and of hn)."""
    h, w_t, steps = h0, w_hh.t(), []
    for t in range(projected.shape[0]):
        if dh is not None:
            h = h + dh[t]
        hidden_part = h @ w_t if b_hh is None else h @ w_t + b_hh
        x_r, x_z, x_n = projected[t].chunk(3, -1)
        h_r, h_z, hn = hidden_part.chunk(3, -1)
        if dhn is not None:
            hn = hn + dhn[t]
        r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
        n = (x_n + r * hn).tanh()
        h = n + z * (h - n)
        steps.append(h)
    return stack(steps, 0)


def rnn_recurrence(projected: Tensor, h0: Tensor, w_hh: Tensor, dh: Tensor | None = None, *, relu: bool = False) -> Tensor:
    h, w_t, steps = h0, w_hh.t(), []
    for t in range(projected.shape[0]):
        if dh is not None:
            h = h + dh[t]
        pre = projected[t] + h @ w_t
        h = pre.relu() if relu else pre.tanh()
        steps.append(h)
    return stack(steps, 0)
