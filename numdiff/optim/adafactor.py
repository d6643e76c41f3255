"""Adafactor: Adam's second moment kept as row and column factors for a matrix parameter."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from numdiff._dtype_info import finfo
from numdiff.autograd.grad_mode import no_grad
from numdiff.creation import zeros
from numdiff.optim._tensor_update import gradients, store
from numdiff.optim.optimizer import Optimizer, check_implementation_flags, increment_step, step_tensor


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern, 2018) with PyTorch's options. At step t, with
    ``beta2_t = t ** beta2_decay`` and ``rho_t = min(lr, 1 / sqrt(t))``:

    - a parameter of 2 or more dims keeps ``row_var`` (mean of g^2 over the last dim) and
      ``col_var`` (over the second-to-last), each ``lerp``ed toward the new means by beta2_t; the
      variance estimate is ``row_var @ col_var / max(mean(row_var), eps1)``. A vector keeps the
      full ``variance``.
    - ``update = g / sqrt(max(estimate, eps1^2))``, divided by ``max(1, rms(update) / d)``;
    - ``p -= max(eps2, rms(p)) * rho_t * update``, the rms of p taken before the decoupled
      weight decay ``p *= 1 - lr * weight_decay``.

    eps1 None means the dtype's machine epsilon.

    >>> opt = numdiff.optim.Adafactor(model.parameters(), lr=1e-2)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        check_implementation_flags("Adafactor", foreach=foreach)
        checks = [
            (0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}"),
            (beta2_decay <= 0.0, f"beta2_decay should be <= 0 but is: {beta2_decay}"),
            (eps[0] is None or eps[0] >= 0.0, f"epsilon1 should be >= 0 but is: {eps[0]}"),
            (eps[1] >= 0.0, f"epsilon2 should be >= 0 but is: {eps[1]}"),
            (d >= 1.0, f"Clipping threshold d should be >= 1 but is: {d}"),
            (weight_decay >= 0.0, f"weight_decay should be >= 0 but is: {weight_decay}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"Adafactor: {message}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adafactor update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr, (eps1, eps2), d = group["lr"], group["eps"], group["d"]
            for p, grad in gradients(group, type(self).__name__):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = step_tensor()
                    if grad.ndim > 1:
                        state["row_var"] = zeros(*grad.shape[:-1], 1, dtype=grad.dtype, device=grad.device)
                        state["col_var"] = zeros(*grad.shape[:-2], 1, grad.shape[-1], dtype=grad.dtype, device=grad.device)
                    else:
                        state["variance"] = zeros(*grad.shape, dtype=grad.dtype, device=grad.device)
                step = increment_step(state["step"])
                floor = finfo(p.dtype).eps if eps1 is None else eps1
                beta2_t = step ** group["beta2_decay"]
                scale = max(eps2, p.norm(2).item() / math.sqrt(p.numel())) * min(lr, 1 / math.sqrt(step))
                if group["weight_decay"] != 0:
                    store(p, p.detach() * (1 - lr * group["weight_decay"]))
                squared = grad * grad
                if grad.ndim > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    store(row_var, row_var.lerp(squared.mean(dim=-1, keepdim=True), beta2_t))
                    store(col_var, col_var.lerp(squared.mean(dim=-2, keepdim=True), beta2_t))
                    estimate = (row_var @ col_var) / row_var.mean(dim=-2, keepdim=True).clamp(min=floor)
                else:
                    store(state["variance"], state["variance"].lerp(squared, beta2_t))
                    estimate = state["variance"]
                update = estimate.clamp(min=floor * floor).rsqrt() * grad
                denominator = max(1.0, update.norm(2).item() / (math.sqrt(update.numel()) * d))
                store(p, p.detach() - update * (scale / denominator))
        return loss
