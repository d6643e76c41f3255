"""Adadelta: step sizes from running averages of squared gradients and squared updates."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.optim._tensor_update import check_nonnegative, gradients, store
from numdiff.optim.optimizer import (
    Optimizer,
    check_implementation_flags,
    increment_step,
    step_tensor,
    zeros_state,
)


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012): ``v = rho*v + (1-rho)*g*g``,
    ``delta = sqrt(u + eps) / sqrt(v + eps) * g``, ``u = rho*u + (1-rho)*delta*delta``,
    ``p -= lr * delta``, with ``g = ±grad + weight_decay * p``.

    >>> opt = numdiff.optim.Adadelta(model.parameters(), lr=1.0, rho=0.9)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_implementation_flags(
            "Adadelta", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        check_nonnegative({"learning rate": lr, "epsilon value": eps, "weight_decay value": weight_decay})
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize}
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adadelta update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            rho, eps, weight_decay = group["rho"], group["eps"], group["weight_decay"]
            for p, grad in gradients(group, type(self).__name__):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = step_tensor()
                    state["square_avg"] = zeros_state(p)
                    state["acc_delta"] = zeros_state(p)
                increment_step(state["step"])
                if weight_decay != 0:
                    grad = grad + weight_decay * p.detach()
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                store(square_avg, square_avg * rho + grad * grad * (1 - rho))
                delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * grad
                store(acc_delta, acc_delta * rho + delta * delta * (1 - rho))
                store(p, p.detach() - delta * group["lr"])
        return loss
