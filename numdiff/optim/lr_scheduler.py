"""Learning-rate schedulers: StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, OneCycleLR,
and (from numdiff.optim._lr_composed, _lr_factor, _lr_cyclic and _lr_plateau) LambdaLR, LinearLR,
SequentialLR, ChainedScheduler, MultiplicativeLR, ConstantLR, PolynomialLR, CyclicLR,
CosineAnnealingWarmRestarts and ReduceLROnPlateau: every scheduler of torch.optim.lr_scheduler.

A scheduler rewrites ``group["lr"]`` of its optimizer's parameter groups each time `step()` is
called, with PyTorch's recurrences (each value computed from the previous group lr, so schedulers
can be chained); `step(epoch)` jumps with the closed form instead.
"""

from __future__ import annotations

import math
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from functools import wraps
from typing import Any
from weakref import ref

from numdiff.optim.optimizer import Optimizer


class LRScheduler:
    """Base class: subclasses implement `get_lr()` (and may add `_get_closed_form_lr()`).

    Constructing a scheduler sets ``group["initial_lr"]`` (unless resuming with ``last_epoch >= 0``)
    and takes the first step, which leaves the lr at its initial value.
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming a scheduler "
                        f"with last_epoch={last_epoch}: load the optimizer's state dict first, or start "
                        "with last_epoch=-1"
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        _track_optimizer_steps(optimizer)
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickling: the optimizer's ``step`` wrapper is not pickled, so wrap it again."""
        self.__dict__.update(state)
        if "optimizer" in state:
            _track_optimizer_steps(self.optimizer)

    def get_lr(self) -> list[float]:
        """The next learning rate of each parameter group (called by `step`)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_lr()")

    def get_last_lr(self) -> list[float]:
        """The learning rates the last `step()` set, one per parameter group."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule by one (call after ``optimizer.step()``)."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. Call them in the "
                "opposite order: `optimizer.step()` before `lr_scheduler.step()`; otherwise the first "
                "value of the learning rate schedule is skipped.",
                UserWarning,
                stacklevel=2,
            )
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            warnings.warn(
                "The epoch parameter in `scheduler.step()` is deprecated (as in PyTorch): call "
                "`scheduler.step()` without it.",
                UserWarning,
                stacklevel=2,
            )
            values = self._jump_to(epoch)
        self._set_lrs(values)

    def _jump_to(self, epoch: int) -> list[float]:
        """The lrs at `epoch`, from the closed form where the schedule has one."""
        self.last_epoch = epoch
        closed_form = getattr(self, "_get_closed_form_lr", None)
        return closed_form() if closed_form is not None else self.get_lr()

    def _set_lrs(self, values: list[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes saved by `state_dict`."""
        self.__dict__.update(state_dict)

    def _group_lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]


def _track_optimizer_steps(optimizer: Optimizer) -> None:
    """Wrap ``optimizer.step`` once so schedulers can tell whether it has been called yet."""
    if getattr(optimizer.step, "_tracked_by_lr_scheduler", False):
        return
    optimizer_ref = ref(optimizer)
    unbound = type(optimizer).step

    @wraps(unbound)
    def step(*args: Any, **kwargs: Any) -> Any:
        opt = optimizer_ref()
        opt._opt_called = True
        return unbound(opt, *args, **kwargs)

    step._tracked_by_lr_scheduler = True
    optimizer.step = step


class StepLR(LRScheduler):
    """Multiply the lr by `gamma` every `step_size` epochs: ``base_lr * gamma ** (epoch // step_size)``.

    >>> sched = StepLR(opt, step_size=30, gamma=0.1)
    """

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by `gamma` at each milestone epoch (repeated milestones multiply again).

    >>> sched = MultiStepLR(opt, milestones=[30, 80], gamma=0.1)
    """

    def __init__(
        self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._group_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._group_lrs()]

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes saved by `state_dict` (milestones may come back as a plain dict)."""
        super().load_state_dict(state_dict)
        self.milestones = Counter(self.milestones)

    def _get_closed_form_lr(self) -> list[float]:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma**passed for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by `gamma` every epoch: ``base_lr * gamma ** epoch``.

    >>> sched = ExponentialLR(opt, gamma=0.95)
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine from base_lr down to `eta_min` over `T_max` epochs, then back up (a period of 2*T_max).

    Closed form: ``eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``.

    >>> sched = CosineAnnealingLR(opt, T_max=100)
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:  # noqa: N803
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, t_max, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._group_lrs()
        if self._step_count == 1 and t > 0:
            return [
                eta_min + (base - eta_min) * (1 + math.cos(t * math.pi / t_max)) / 2 for base in self.base_lrs
            ]
        if (t - 1 - t_max) % (2 * t_max) == 0:
            return [
                lr + (base - eta_min) * (1 - math.cos(math.pi / t_max)) / 2
                for base, lr in zip(self.base_lrs, self._group_lrs())
            ]
        ratio = (1 + math.cos(math.pi * t / t_max)) / (1 + math.cos(math.pi * (t - 1) / t_max))
        return [ratio * (lr - eta_min) + eta_min for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        cos_term = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * cos_term for base in self.base_lrs]


def _per_group(name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"expected {len(optimizer.param_groups)} values for {name}, got {len(value)}")
        return list(value)
    return [value] * len(optimizer.param_groups)


class OneCycleLR(LRScheduler):
    """The 1cycle policy: warm up from ``max_lr/div_factor`` to `max_lr`, then anneal down to
    ``initial_lr/final_div_factor``, cycling momentum (or Adam's beta1) the opposite way.

    Step it once per batch, `total_steps` (or ``epochs * steps_per_epoch``) times.

    >>> sched = OneCycleLR(opt, max_lr=0.01, epochs=10, steps_per_epoch=len(loader))
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self.anneal_strategy = anneal_strategy
        warmup_end = float(pct_start * self.total_steps) - 1
        if three_phase:
            # (end step, lr from, lr to, momentum from, momentum to), group keys
            self._phases = [
                (warmup_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (
                    float(2 * pct_start * self.total_steps) - 2,
                    "max_lr",
                    "initial_lr",
                    "base_momentum",
                    "max_momentum",
                ),
                (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._phases = [
                (warmup_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for group, top, bottom in zip(optimizer.param_groups, max_momentums, base_momentums):
                    self._set_momentum(group, top)
                    group["max_momentum"] = top
                    group["base_momentum"] = bottom
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"Tried to step {step} times. The specified number of total steps is {self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, (end_step, lr_from, lr_to, mom_from, mom_to) in enumerate(self._phases):
                if step <= end_step or i == len(self._phases) - 1:
                    pct = (step - start_step) / (end_step - start_step)
                    lrs.append(self._anneal(group[lr_from], group[lr_to], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[mom_from], group[mom_to], pct))
                    break
                start_step = end_step
        return lrs


# Defined in their own modules (they build on LRScheduler above), importable from here as in PyTorch.
from numdiff.optim._lr_composed import ChainedScheduler, LambdaLR, LinearLR, SequentialLR  # noqa: E402
from numdiff.optim._lr_cyclic import CosineAnnealingWarmRestarts, CyclicLR  # noqa: E402
from numdiff.optim._lr_factor import ConstantLR, MultiplicativeLR, PolynomialLR  # noqa: E402
from numdiff.optim._lr_plateau import ReduceLROnPlateau  # noqa: E402


class _LRScheduler(LRScheduler):
    """PyTorch's old name for LRScheduler, kept for code that subclasses it."""


__all__ = [
    "CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "OneCycleLR",
    "ReduceLROnPlateau", "SequentialLR", "StepLR",
]
__all__ += [
    "ChainedScheduler", "ConstantLR", "CosineAnnealingWarmRestarts", "CyclicLR", "MultiplicativeLR", "PolynomialLR",
]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
