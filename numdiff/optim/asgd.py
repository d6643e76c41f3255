"""ASGD: SGD with a decaying step size and a running average of the iterates."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from numdiff.autograd.grad_mode import no_grad
from numdiff.optim._tensor_update import check_nonnegative, gradients, store
from numdiff.optim.optimizer import (
    Optimizer,
    check_implementation_flags,
    increment_step,
    step_tensor,
    zeros_state,
)


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky, 1992), PyTorch's form: ``p *= 1 - lambd * eta``, then
    ``p -= eta * g`` (``g = ±grad + weight_decay * p``); the average ``ax`` tracks p until step `t0`
    and averages the iterates after it (``ax += (p - ax) * mu``). After step t,
    ``eta = lr / (1 + lambd * lr * t) ** alpha`` and ``mu = 1 / max(1, t - t0)``.

    As in PyTorch, ``eta`` and ``mu`` are 0-d float32 tensors in the state, and always hold
    float32-rounded values (also once a state dict load has cast them to a float64 model's dtype),
    so a float64 model steps with a float32-rounded eta. The averaged parameters are
    ``optimizer.state[p]["ax"]``.

    >>> opt = numdiff.optim.ASGD(model.parameters(), lr=0.01, t0=100)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_implementation_flags(
            "ASGD", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        check_nonnegative({"learning rate": lr, "weight_decay value": weight_decay})
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay, "maximize": maximize}
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One ASGD update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr, lambd, weight_decay = group["lr"], group["lambd"], group["weight_decay"]
            for p, grad in gradients(group, type(self).__name__):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = step_tensor()
                    state["eta"] = step_tensor(lr)
                    state["mu"] = step_tensor(1.0)
                    state["ax"] = zeros_state(p)
                step = increment_step(state["step"])
                if weight_decay != 0:
                    grad = grad + weight_decay * p.detach()
                eta, mu, ax = float(state["eta"]), float(state["mu"]), state["ax"]
                store(p, p.detach() * (1 - lambd * eta))
                store(p, p.detach() - grad * eta)
                store(ax, ax + (p.detach() - ax) * mu if mu != 1 else p.detach())
                _assign(state["eta"], lr / (1 + lambd * lr * step) ** group["alpha"])
                _assign(state["mu"], 1 / max(1, step - group["t0"]))
        return loss


def _assign(scalar: Any, value: float) -> None:
    """Write a Python number into a 0-d state tensor, rounded to float32 first: PyTorch makes a
    float32 tensor of the new value and copies it in, so a state cast to float64 by a state dict
    load still holds float32-rounded values."""
    scalar._data[...] = np.float32(value)
    scalar._version_counter[0] += 1
