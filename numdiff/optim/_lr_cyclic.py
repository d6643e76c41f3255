"""Cyclic schedules: CyclicLR (triangular waves between two bounds, momentum the other way) and
CosineAnnealingWarmRestarts (cosine annealing restarted every T_i epochs, T_i growing by T_mult)."""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from typing import Any

from numdiff.optim.lr_scheduler import LRScheduler, _per_group
from numdiff.optim.optimizer import Optimizer

_MODES = ("triangular", "triangular2", "exp_range")


class CyclicLR(LRScheduler):
    """Cycle the lr between `base_lr` and `max_lr` (Smith, 2017): up over `step_size_up` steps,
    down over `step_size_down`; the amplitude is scaled per cycle ('triangular': 1, 'triangular2':
    halved each cycle) or per step ('exp_range': ``gamma ** step``), or by your `scale_fn`.

    With `cycle_momentum`, momentum (or Adam's beta1) cycles between `max_momentum` and
    `base_momentum` the opposite way. Step it once per batch.

    >>> sched = CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=2000, mode="triangular2")
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.8,
        max_momentum: float | list[float] = 0.9,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if mode not in _MODES and scale_fn is None:
            raise ValueError(f"CyclicLR: mode must be one of {_MODES} (or pass scale_fn), got {mode!r}")
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("CyclicLR: optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for top, bottom, group in zip(self.max_momentums, self.base_momentums, optimizer.param_groups):
                    self._set_momentum(group, top)
                    group["max_momentum"] = top
                    group["base_momentum"] = bottom
        super().__init__(optimizer, last_epoch)
        # The cycle runs from base_lr, whatever "initial_lr" the groups held before.
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        """The built-in mode's scale function (and the scale mode it implies), unless one was given."""
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref, self.scale_mode = _unit_scale, "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref, self.scale_mode = _halving_scale, "cycle"
        elif self.mode == "exp_range":
            gamma = self.gamma
            self._scale_fn_ref, self.scale_mode = (lambda step: gamma**step), "iterations"

    def scale_fn(self, x: float) -> float:
        """The amplitude factor at cycle (or step) `x`."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        position = 1.0 + self.last_epoch / self.total_size - cycle  # in [0, 1) within this cycle
        if position <= self.step_ratio:
            height = position / self.step_ratio
        else:
            height = (position - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * height * scale for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, bottom, top in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                self._set_momentum(group, top - (top - bottom) * height * scale)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """The attributes without the scale functions; a callable object's scale_fn keeps its ``__dict__``."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_scale_fn_ref", "_scale_fn_custom")}
        custom = self._scale_fn_custom
        keep = custom is not None and not isinstance(custom, types.FunctionType)
        state["_scale_fn_custom"] = custom.__dict__.copy() if keep else None
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes; this scheduler's own scale_fn stays, with a saved ``__dict__`` applied."""
        state = dict(state_dict)
        saved_fn = state.pop("_scale_fn_custom")
        self.__dict__.update(state)
        if saved_fn is not None:
            self._scale_fn_custom.__dict__.update(saved_fn)
        self._init_scale_fn()


def _unit_scale(cycle: float) -> float:
    return 1.0


def _halving_scale(cycle: float) -> float:
    return 1 / 2.0 ** (cycle - 1)


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from base_lr to `eta_min` over T_i epochs, restarting at base_lr; the first
    period is `T_0` and each next one `T_mult` times longer (SGDR, Loshchilov & Hutter, 2017).

    ``step(epoch)`` takes fractional epochs, for stepping per batch:
    ``sched.step(epoch + i / iters_per_epoch)``.

    >>> sched = CosineAnnealingWarmRestarts(opt, T_0=10, T_mult=2, eta_min=1e-5)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,  # noqa: N803
        T_mult: int = 1,  # noqa: N803
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected a positive integer T_0, got {T_0!r}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected an integer T_mult >= 1, got {T_mult!r}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(
                f"CosineAnnealingWarmRestarts: expected a float or int eta_min, got {eta_min!r} of type "
                f"{type(eta_min).__name__}"
            )
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        cos_term = 1 + math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (base - self.eta_min) * cos_term / 2 for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or jump to `epoch` (which may be fractional), restarting as needed."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        elif epoch < 0:
            raise ValueError(f"CosineAnnealingWarmRestarts.step: expected a non-negative epoch, got {epoch}")
        elif epoch < self.T_0:
            self.T_i = self.T_0
            self.T_cur = epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            # Restarts so far: the largest n with T_0 (T_mult^n - 1) / (T_mult - 1) <= epoch.
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult**n
        self.last_epoch = math.floor(epoch)
        self._set_lrs(self.get_lr())


__all__ = ["CosineAnnealingWarmRestarts", "CyclicLR"]
