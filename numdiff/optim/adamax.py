"""Adamax: Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.ops.selection import maximum
from numdiff.optim._adam_family import (
    adam_family_defaults,
    apply_weight_decay,
    start_state,
    update_first_moment,
)
from numdiff.optim._tensor_update import gradients, store
from numdiff.optim.optimizer import Optimizer, check_implementation_flags, increment_step


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, 2015, section 7): ``m = lerp(m, g, 1-beta1)``,
    ``u = max(beta2*u, |g| + eps)``, ``p -= lr / (1-beta1^t) * m / u``, with
    ``g = ±grad + weight_decay * p``.

    >>> opt = numdiff.optim.Adamax(model.parameters(), lr=2e-3)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_implementation_flags(
            "Adamax", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        super().__init__(params, adam_family_defaults(lr, betas, eps, weight_decay, maximize=maximize))

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adamax update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p, grad in gradients(group, type(self).__name__):
                state = self.state[p]
                start_state(state, p, "exp_avg", "exp_inf")
                step = increment_step(state["step"])
                grad = apply_weight_decay(p, grad, group)
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                update_first_moment(exp_avg, grad, beta1)
                store(exp_inf, maximum(exp_inf * beta2, grad.abs() + group["eps"]))
                step_size = group["lr"] / (1 - beta1**step)
                store(p, p.detach() - exp_avg / exp_inf * step_size)
        return loss
