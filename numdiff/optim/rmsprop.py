"""RMSprop, optionally centered and with momentum."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.optim._group_update import GroupUpdate, unused_buffer
from numdiff.optim._tensor_update import check_nonnegative
from numdiff.optim.optimizer import (
    Optimizer,
    check_implementation_flags,
    flat_state,
    increment_step,
    step_tensor,
    zeros_state,
)


class RMSprop(Optimizer):
    """RMSprop: ``sq = alpha*sq + (1-alpha)*g*g``, ``avg = sqrt(sq - gavg^2 if centered else sq) + eps``,
    then ``p -= lr * g / avg`` (or through a momentum buffer ``buf = momentum*buf + g/avg``).

    >>> opt = numdiff.optim.RMSprop(model.parameters(), lr=1e-2, momentum=0.9, centered=True)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_implementation_flags(
            "RMSprop", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        check_nonnegative({
            "learning rate": lr,
            "epsilon value": eps,
            "momentum value": momentum,
            "weight_decay value": weight_decay,
            "alpha value": alpha,
        })
        defaults = {
            "lr": lr,
            "alpha": alpha,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "centered": centered,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One RMSprop update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            momentum = float(group["momentum"])
            centered = bool(group["centered"])
            update = GroupUpdate("rmsprop", (centered, group["maximize"]))
            for p, grad in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = step_tensor()
                    state["square_avg"] = zeros_state(p)
                if momentum > 0.0 and "momentum_buffer" not in state:
                    state["momentum_buffer"] = zeros_state(p)
                if centered and "grad_avg" not in state:
                    state["grad_avg"] = zeros_state(p)
                increment_step(state["step"])
                param = update.param(p)
                unused = unused_buffer(param)
                arrays = (
                    param, grad, flat_state(p, state["square_avg"], "square_avg"),
                    flat_state(p, state["momentum_buffer"], "momentum_buffer") if momentum > 0.0 else unused,
                    flat_state(p, state["grad_avg"], "grad_avg") if centered else unused,
                )  # fmt: skip
                update.add(arrays, (group["lr"], group["alpha"], group["eps"], group["weight_decay"], momentum))
            update.run()
        return loss
