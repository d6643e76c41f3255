"""Adagrad: per-element learning rates from the running sum of squared gradients."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.kernels.optim_steps import adagrad_hyper
from numdiff.optim._group_update import GroupUpdate
from numdiff.optim._sparse_steps import adagrad_sparse_step
from numdiff.optim._tensor_update import check_nonnegative
from numdiff.optim.optimizer import (
    Optimizer,
    check_implementation_flags,
    flat_state,
    increment_step,
    step_tensor,
    zeros_state,
)


class Adagrad(Optimizer):
    """Adagrad: ``sum += g*g``, ``p -= lr / (1 + (t-1)*lr_decay) * g / (sqrt(sum) + eps)``.

    >>> opt = numdiff.optim.Adagrad(model.parameters(), lr=1e-2, initial_accumulator_value=0.1)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_implementation_flags(
            "Adagrad", foreach=foreach, differentiable=differentiable, fused=fused
        )
        check_nonnegative({
            "learning rate": lr,
            "lr_decay value": lr_decay,
            "weight_decay value": weight_decay,
            "initial_accumulator_value value": initial_accumulator_value,
            "epsilon value": eps,
        })
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "maximize": maximize,
        }
        super().__init__(params, defaults)
        # As in PyTorch, state exists from construction, so a fresh state_dict already holds it.
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = step_tensor()
            state["sum"] = zeros_state(p, float(group["initial_accumulator_value"]))
        return state

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adagrad update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            update = GroupUpdate("adagrad", (group["maximize"],))
            for p, grad in self._params_with_grad(group):
                state = self._init_state(p, group)
                step = increment_step(state["step"])
                hyper = adagrad_hyper(step, group["lr"], group["lr_decay"], group["eps"], group["weight_decay"])
                update.add((update.param(p), grad, flat_state(p, state["sum"], "sum")), hyper)
            update.run()
        return loss

    def _sparse_step(self, p: Any, grad: Any, group: dict[str, Any]) -> None:
        state = self._init_state(p, group)
        adagrad_sparse_step(p, grad, state["sum"], increment_step(state["step"]), group)
