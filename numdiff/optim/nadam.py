"""NAdam: Adam with Nesterov momentum and a warming-up momentum schedule."""

from __future__ import annotations

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
from numdiff.optim._tensor_update import check_nonnegative, gradients, store
from numdiff.optim.optimizer import Optimizer, check_implementation_flags, increment_step


class NAdam(Optimizer):
    """NAdam (Dozat, 2016): momentum coefficients ``mu_t = beta1 * (1 - 0.5 * 0.96^(t*psi))``
    (``psi = momentum_decay``), their running product ``P_t``, and

    ``p -= lr * ((1-mu_t)/(1-P_t) * g + mu_{t+1}/(1-P_t*mu_{t+1}) * m) / (sqrt(v/(1-beta2^t)) + eps)``

    with Adam's moments ``m``, ``v``. ``decoupled_weight_decay`` decays the parameter itself.

    >>> opt = numdiff.optim.NAdam(model.parameters(), lr=2e-3)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_implementation_flags(
            "NAdam", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        defaults = adam_family_defaults(
            lr, betas, eps, weight_decay,
            momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
        )  # fmt: skip
        check_nonnegative({"momentum_decay value": momentum_decay})
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One NAdam update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, decay = group["lr"], group["momentum_decay"]
            for p, grad in gradients(group, type(self).__name__):
                state = self.state[p]
                # mu_product is a 0-d float32 tensor, as PyTorch keeps it
                start_state(state, p, "exp_avg", "exp_avg_sq", mu_product=1.0)
                step = increment_step(state["step"])
                grad = apply_weight_decay(p, grad, group)
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
                mu_product = state["mu_product"]
                store(mu_product, mu_product * mu)
                product = float(mu_product.item())
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                update_first_moment(exp_avg, grad, beta1)
                update_second_moment(exp_avg_sq, grad, beta2)
                denom = (exp_avg_sq / (1 - beta2**step)).sqrt() + group["eps"]
                param = p.detach() - grad / denom * (lr * (1.0 - mu) / (1.0 - product))
                store(p, param - exp_avg / denom * (lr * mu_next / (1.0 - product * mu_next)))
        return loss
