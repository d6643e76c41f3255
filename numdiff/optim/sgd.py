"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.optim._group_update import GroupUpdate, unused_buffer
from numdiff.optim._sparse_steps import sgd_sparse_step
from numdiff.optim._tensor_update import check_nonnegative
from numdiff.optim.optimizer import (
    Optimizer,
    check_implementation_flags,
    flat_state,
    zeros_state,
)


class SGD(Optimizer):
    """SGD: ``buf = momentum * buf + (1 - dampening) * g`` (buf = g on the first step), then
    ``p -= lr * (g + momentum * buf if nesterov else buf)``, where ``g = ±grad + weight_decay * p``.

    >>> opt = numdiff.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_implementation_flags(
            "SGD", foreach=foreach, differentiable=differentiable, fused=fused
        )
        check_nonnegative({"learning rate": lr, "momentum value": momentum, "weight_decay value": weight_decay})
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError(
                "Nesterov momentum requires a momentum and zero dampening "
                f"(got momentum={momentum}, dampening={dampening})"
            )
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One SGD update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            momentum = float(group["momentum"])
            update = GroupUpdate("sgd", (group["nesterov"], group["maximize"]))
            for p, grad in self._params_with_grad(group):
                param = update.param(p)
                first_step = False
                buf = unused_buffer(param)
                if momentum != 0.0:
                    state = self.state[p]
                    if state.get("momentum_buffer") is None:
                        state["momentum_buffer"] = zeros_state(p)
                        first_step = True
                    buf = flat_state(p, state["momentum_buffer"], "momentum_buffer")
                hyper = (group["lr"], momentum, group["dampening"], group["weight_decay"], float(first_step))
                update.add((param, grad, buf), hyper)
            update.run()
        return loss

    def _sparse_step(self, p: Any, grad: Any, group: dict[str, Any]) -> None:
        sgd_sparse_step(p, grad, self.state[p], group)
