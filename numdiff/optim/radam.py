"""RAdam: Adam with the variance of its adaptive learning rate rectified."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.optim._adam_family import (
    adam_family_defaults,
    apply_weight_decay,
    start_state,
    update_first_moment,
    update_second_moment,
)
from numdiff.optim._tensor_update import gradients, store
from numdiff.optim.optimizer import Optimizer, check_implementation_flags, increment_step


class RAdam(Optimizer):
    """RAdam (Liu et al., 2020): with ``rho_inf = 2/(1-beta2) - 1`` and
    ``rho_t = rho_inf - 2t*beta2^t/(1-beta2^t)``, a step is plain momentum SGD
    ``p -= lr * m_hat`` while ``rho_t <= 5``, then Adam's step scaled by the rectifier
    ``r_t = sqrt((rho_t-4)(rho_t-2)rho_inf / ((rho_inf-4)(rho_inf-2)rho_t))``.

    >>> opt = numdiff.optim.RAdam(model.parameters(), lr=1e-3)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_implementation_flags(
            "RAdam", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        defaults = adam_family_defaults(
            lr, betas, eps, weight_decay, decoupled_weight_decay=decoupled_weight_decay, maximize=maximize
        )
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One RAdam update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr = group["lr"]
            rho_inf = 2 / (1 - beta2) - 1
            for p, grad in gradients(group, type(self).__name__):
                state = self.state[p]
                start_state(state, p, "exp_avg", "exp_avg_sq")
                step = increment_step(state["step"])
                grad = apply_weight_decay(p, grad, group)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                update_first_moment(exp_avg, grad, beta1)
                update_second_moment(exp_avg_sq, grad, beta2)
                bias_correction2 = 1 - beta2**step
                corrected_avg = exp_avg / (1 - beta1**step)
                rho_t = rho_inf - 2 * step * beta2**step / bias_correction2
                if rho_t > 5.0:
                    rectifier = math.sqrt(
                        (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
                    )
                    adaptive_lr = math.sqrt(bias_correction2) / (exp_avg_sq.sqrt() + group["eps"])
                    store(p, p.detach() - corrected_avg * lr * adaptive_lr * rectifier)
                else:
                    store(p, p.detach() - corrected_avg * lr)
        return loss
