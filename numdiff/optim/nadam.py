"""NAdam: Adam with Nesterov momentum and a warming-up momentum schedule."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.optim._tensor_update import check_betas, check_nonnegative, gradients, store
from numdiff.optim.optimizer import Optimizer, increment_step, step_tensor, zeros_state


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
    ) -> None:
        check_nonnegative(
            learning_rate=lr, epsilon_value=eps, weight_decay_value=weight_decay, momentum_decay=momentum_decay
        )
        check_betas(betas)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One NAdam update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, weight_decay, decay = group["lr"], group["weight_decay"], group["momentum_decay"]
            for p, grad in gradients(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = step_tensor()
                    state["mu_product"] = step_tensor(1.0)  # a 0-d float32 tensor, as PyTorch keeps it
                    state["exp_avg"] = zeros_state(p)
                    state["exp_avg_sq"] = zeros_state(p)
                step = increment_step(state["step"])
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        store(p, p.detach() * (1 - lr * weight_decay))
                    else:
                        grad = grad + weight_decay * p.detach()
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
                mu_product = state["mu_product"]
                store(mu_product, mu_product * mu)
                product = float(mu_product.item())
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                store(exp_avg, exp_avg + (grad - exp_avg) * (1 - beta1))
                store(exp_avg_sq, exp_avg_sq * beta2 + grad * grad * (1 - beta2))
                denom = (exp_avg_sq / (1 - beta2**step)).sqrt() + group["eps"]
                param = p.detach() - grad / denom * (lr * (1.0 - mu) / (1.0 - product))
                store(p, param - exp_avg / denom * (lr * mu_next / (1.0 - product * mu_next)))
        return loss
