"""Rprop: per-element step sizes that grow while the gradient keeps its sign and shrink when it flips."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.creation import full_like
from numdiff.ops.selection import where
from numdiff.optim._tensor_update import check_nonnegative, gradients, store
from numdiff.optim.optimizer import (
    Optimizer,
    check_implementation_flags,
    increment_step,
    step_tensor,
    zeros_state,
)


class Rprop(Optimizer):
    """Resilient backpropagation (Riedmiller & Braun, 1993), PyTorch's variant: each element's
    step size is multiplied by ``etas[1]`` when ``g * g_prev > 0``, by ``etas[0]`` when it is
    negative (and that step is skipped, the remembered gradient zeroed), then clamped to
    `step_sizes`; ``p -= sign(g) * step_size``. Only the gradient's sign is used. Step sizes
    start at `lr`.

    >>> opt = numdiff.optim.Rprop(model.parameters(), lr=0.01, etas=(0.5, 1.2))
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_implementation_flags(
            "Rprop", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        check_nonnegative({"learning rate": lr})
        if len(etas) != 2 or not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas}: Rprop needs 0 < etas[0] < 1 < etas[1]")
        if len(step_sizes) != 2 or not 0.0 <= step_sizes[0] <= step_sizes[1]:
            raise ValueError(f"Invalid step_sizes: {step_sizes}: Rprop needs 0 <= step_sizes[0] <= step_sizes[1]")
        defaults = {"lr": lr, "etas": tuple(etas), "step_sizes": tuple(step_sizes), "maximize": maximize}
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Rprop update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            eta_minus, eta_plus = group["etas"]
            smallest, largest = group["step_sizes"]
            for p, grad in gradients(group, type(self).__name__):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = step_tensor()
                    state["prev"] = zeros_state(p)
                    state["step_size"] = full_like(p, group["lr"])
                increment_step(state["step"])
                prev, step_size = state["prev"], state["step_size"]
                agreement = (grad * prev).sign()
                # 1 where either gradient is 0; a NaN product stays NaN, as in PyTorch.
                factor = where(
                    agreement == 0, 1.0, where(agreement > 0, eta_plus, where(agreement < 0, eta_minus, agreement))
                )
                store(step_size, (step_size * factor).clamp(smallest, largest))
                # After a sign change the step is skipped and the next one compares against 0.
                grad = where(factor == eta_minus, 0.0, grad)
                store(p, p.detach() - grad.sign() * step_size)
                store(prev, grad)
        return loss
