"""LambdaLR (your own factor per epoch), LinearLR (a linear ramp), SequentialLR (schedulers in turn)
and ChainedScheduler (schedulers together)."""

from __future__ import annotations

import types
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any

from numdiff.optim._lr_plateau import ReduceLROnPlateau
from numdiff.optim.lr_scheduler import LRScheduler
from numdiff.optim.optimizer import Optimizer


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(epoch)``, one function for all groups or one per group.

    >>> sched = LambdaLR(opt, lr_lambda=lambda epoch: 0.95 ** epoch)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        groups = len(optimizer.param_groups) if isinstance(optimizer, Optimizer) else 0
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != groups:
                raise ValueError(f"Expected {groups} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            if not callable(lr_lambda):
                raise TypeError(f"lr_lambda must be callable or a list of callables, got {type(lr_lambda).__name__}")
            self.lr_lambdas = [lr_lambda] * groups
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * fn(self.last_epoch) for base, fn in zip(self.base_lrs, self.lr_lambdas)]

    def state_dict(self) -> dict[str, Any]:
        """The attributes, with each lambda as None (plain functions) or its object's ``__dict__``."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else fn.__dict__.copy() for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes; callable objects get their saved ``__dict__`` back."""
        state = dict(state_dict)
        saved_lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, saved in zip(self.lr_lambdas, saved_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class LinearLR(LRScheduler):
    """Scale the lr linearly from ``start_factor * base_lr`` to ``end_factor * base_lr`` over
    `total_iters` steps, then hold it.

    >>> warmup = LinearLR(opt, start_factor=0.1, total_iters=5)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                f"Starting multiplicative factor expected to be greater than 0 and less or equal to 1, got {start_factor}"
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(f"Ending multiplicative factor expected to be between 0 and 1, got {end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._group_lrs()]
        if self.last_epoch > self.total_iters:
            return self._group_lrs()
        # The ratio of this step's factor to the last one's, so chained schedulers compose.
        change = self.end_factor - self.start_factor
        ratio = 1.0 + change / (self.total_iters * self.start_factor + (self.last_epoch - 1) * change)
        return [lr * ratio for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * done
        return [base * factor for base in self.base_lrs]


class SequentialLR(LRScheduler):
    """Run `schedulers` one after another, switching at each epoch in `milestones`; the scheduler
    taking over restarts from its epoch 0.

    >>> sched = SequentialLR(opt, [LinearLR(opt, 0.1, total_iters=5), CosineAnnealingLR(opt, 95)], milestones=[5])
    """

    def __init__(
        self, optimizer: Optimizer, schedulers: Sequence[LRScheduler], milestones: Sequence[int], last_epoch: int = -1
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler")
        for i, scheduler in enumerate(schedulers):
            if not hasattr(scheduler, "optimizer"):
                raise TypeError(f"SequentialLR: schedulers[{i}] is not a scheduler, got {type(scheduler).__name__}")
            if scheduler.optimizer is not optimizer:
                raise ValueError(
                    f"Sequential Schedulers expects all schedulers to belong to the same optimizer, but got "
                    f"scheduler {type(scheduler).__name__} at index {i} with a different optimizer"
                )
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than the number "
                f"of milestone points, but got number of schedulers {len(schedulers)} and the number of "
                f"milestones to be equal to {len(milestones)}"
            )
        self.optimizer = optimizer
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        # Each scheduler's constructor already stepped the lr; undo that, then start the first one.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for scheduler in self._schedulers:
            scheduler.last_epoch -= 1
        first = self._schedulers[0]
        first._is_initial = True
        try:
            first.last_epoch += 1
            first._set_lrs(first.get_lr())
        finally:
            first._is_initial = False
        self._last_lr = first.get_last_lr()

    def step(self) -> None:  # type: ignore[override]
        """Advance the active scheduler (a newly active one jumps to its epoch 0)."""
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._set_lrs(scheduler._jump_to(0))
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        """Own attributes plus each scheduler's state dict."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [scheduler.state_dict() for scheduler in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore own attributes and each scheduler's state."""
        state = dict(state_dict)
        saved = state.pop("_schedulers")
        self.__dict__.update(state)
        for scheduler, scheduler_state in zip(self._schedulers, saved):
            scheduler.load_state_dict(scheduler_state)


class ChainedScheduler(LRScheduler):
    """Step every one of `schedulers` at each step, in order, so their changes to the lr compose
    (each one's recurrence starts from the lr the previous one left).

    >>> sched = ChainedScheduler([ConstantLR(opt, factor=0.1, total_iters=2), ExponentialLR(opt, gamma=0.9)])
    """

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError("ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.")

        optimizer = optimizer or schedulers[0].optimizer
        for i, scheduler in enumerate(schedulers):
            if not hasattr(scheduler, "optimizer"):
                raise TypeError(f"ChainedScheduler: schedulers[{i}] is not a scheduler, got {type(scheduler).__name__}")
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(
                    "ChainedScheduler does not support `ReduceLROnPlateau` scheduler as it requires additional "
                    f"kwargs to be specified when calling `step`, but got one at index {i} in the given "
                    "schedulers sequence."
                )
            if scheduler.optimizer is not optimizer:
                raise ValueError(
                    "ChainedScheduler expects all schedulers to belong to the same optimizer, but got "
                    f"scheduler {type(scheduler).__name__} at index {i} with a different optimizer"
                )
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def step(self) -> None:  # type: ignore[override]
        """Step each scheduler in turn."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    # Own attributes plus each scheduler's state dict, as SequentialLR's.
    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict
