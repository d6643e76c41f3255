"""Adam and AdamW (decoupled weight decay), both with the AMSGrad variant."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.kernels.optim_steps import adam_hyper
from numdiff.optim._adam_family import adam_family_defaults, start_state
from numdiff.optim._group_update import GroupUpdate, unused_buffer
from numdiff.optim.optimizer import (
    Optimizer,
    check_implementation_flags,
    flat_state,
    increment_step,
    zeros_state,
)


class Adam(Optimizer):
    """Adam: ``m = lerp(m, g, 1-beta1)``, ``v = beta2*v + (1-beta2)*g*g``,
    ``p -= lr/(1-beta1^t) * m / (sqrt(v)/sqrt(1-beta2^t) + eps)``.

    ``g = ±grad + weight_decay * p``; with ``decoupled_weight_decay`` (AdamW) the decay is applied
    to the parameter instead, ``p *= 1 - lr*weight_decay``. ``amsgrad`` divides by the running
    maximum of ``v``.

    >>> opt = numdiff.optim.Adam(model.parameters(), lr=1e-3)
    """

    sparse_gradient_refusal = "Adam does not support sparse gradients, please consider SparseAdam instead"

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        decoupled_weight_decay: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_implementation_flags(
            "Adam", foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused
        )
        defaults = adam_family_defaults(
            lr, betas, eps, weight_decay,
            amsgrad=amsgrad, maximize=maximize, decoupled_weight_decay=decoupled_weight_decay,
        )  # fmt: skip
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adam update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            amsgrad = bool(group["amsgrad"])
            update = GroupUpdate("adam", (group["decoupled_weight_decay"], amsgrad, group["maximize"]))
            for p, grad in self._params_with_grad(group):
                state = self.state[p]
                start_state(state, p, "exp_avg", "exp_avg_sq")
                if amsgrad and "max_exp_avg_sq" not in state:
                    state["max_exp_avg_sq"] = zeros_state(p)
                param = update.param(p)
                max_exp_avg_sq = (
                    flat_state(p, state["max_exp_avg_sq"], "max_exp_avg_sq") if amsgrad else unused_buffer(param)
                )
                arrays = (
                    param, grad, flat_state(p, state["exp_avg"], "exp_avg"),
                    flat_state(p, state["exp_avg_sq"], "exp_avg_sq"), max_exp_avg_sq,
                )  # fmt: skip
                step = increment_step(state["step"])
                update.add(arrays, adam_hyper(step, group["lr"], beta1, beta2, group["eps"], group["weight_decay"]))
            update.run()
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr*weight_decay`` before the Adam step).

    >>> opt = numdiff.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_implementation_flags(
            "AdamW", foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused
        )
        super().__init__(
            params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize, decoupled_weight_decay=True
        )
