"""ReduceLROnPlateau: cut the learning rate when a watched metric stops improving."""

from __future__ import annotations

import math
from typing import Any

from numdiff.optim.lr_scheduler import LRScheduler
from numdiff.optim.optimizer import Optimizer


class ReduceLROnPlateau(LRScheduler):
    """Multiply each group's lr by `factor` (not below `min_lr`) once the metric passed to
    `step(metric)` has not improved for more than `patience` epochs, then wait `cooldown` epochs.
    "Improved" means better than the best so far by `threshold` (relative to it with
    ``threshold_mode="rel"``, absolute with ``"abs"``), in direction `mode` ("min" or "max").

    >>> sched = ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2)
    >>> sched.step(val_loss)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | list[float] = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError(f"Factor should be < 1.0, got {factor}")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.factor = factor
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = self._group_lrs()
        self._check_mode(mode, threshold_mode)
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self._reset()

    @staticmethod
    def _check_mode(mode: str, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown! (expected 'min' or 'max')")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown! (expected 'rel' or 'abs')")

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def is_better(self, current: float, best: float) -> bool:
        """Whether `current` beats `best` by the threshold, in the direction of `mode`."""
        if self.threshold_mode == "rel":
            # Scale best rather than subtract best * threshold: that would be inf - inf at the start.
            scale = 1 - self.threshold if self.mode == "min" else 1 + self.threshold
            return current < best * scale if self.mode == "min" else current > best * scale
        if self.mode == "min":
            return current < best - self.threshold
        return current > best + self.threshold

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def step(self, metrics: Any) -> None:  # type: ignore[override]
        """Record this epoch's metric (a number or a one-element tensor) and cut the lr on a plateau."""
        current = float(metrics)
        self.last_epoch += 1
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs):
                old = float(group["lr"])
                new = max(old * self.factor, min_lr)
                if old - new > self.eps:  # changes smaller than eps are not worth making
                    group["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._group_lrs()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes saved by `state_dict`, checking the saved modes."""
        self._check_mode(state_dict["mode"], state_dict["threshold_mode"])
        super().load_state_dict(state_dict)
