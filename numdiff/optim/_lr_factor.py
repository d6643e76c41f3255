"""MultiplicativeLR (your own factor each epoch), ConstantLR (a factor for the first epochs) and
PolynomialLR (a polynomial decay to zero), with PyTorch's recurrences and closed forms."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from numdiff.optim._lr_composed import LambdaLR
from numdiff.optim.lr_scheduler import LRScheduler
from numdiff.optim.optimizer import Optimizer


class MultiplicativeLR(LRScheduler):
    """Multiply the lr by ``lr_lambda(epoch)`` every epoch after the first (one function for all
    groups or one per group); state dicts keep callable objects' attributes, as LambdaLR's.

    >>> sched = MultiplicativeLR(opt, lr_lambda=lambda epoch: 0.95)
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
                raise ValueError(f"MultiplicativeLR: expected {groups} lr_lambdas (one per group), got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * groups
        for i, fn in enumerate(self.lr_lambdas):
            if not callable(fn):
                raise TypeError(f"MultiplicativeLR: lr_lambda[{i}] should be a function, got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._group_lrs()
        return [lr * fn(self.last_epoch) for lr, fn in zip(self._group_lrs(), self.lr_lambdas)]

    # The lambdas are saved and restored as LambdaLR's are.
    state_dict = LambdaLR.state_dict
    load_state_dict = LambdaLR.load_state_dict


class ConstantLR(LRScheduler):
    """Scale the lr by `factor` for the first `total_iters` epochs, then restore it.

    >>> warmup = ConstantLR(opt, factor=0.5, total_iters=4)
    """

    def __init__(
        self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1
    ) -> None:
        if not 0 <= factor <= 1.0:
            raise ValueError(f"ConstantLR: the multiplicative factor must be between 0 and 1, got {factor}")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._group_lrs()]
        if self.last_epoch != self.total_iters:
            return self._group_lrs()
        return [lr * (1.0 / self.factor) for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        factor = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [base * factor for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the lr as ``base_lr * (1 - epoch / total_iters) ** power``, reaching 0 at `total_iters`.

    >>> sched = PolynomialLR(opt, total_iters=100, power=2.0)
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._group_lrs()
        # This epoch's factor over the last one's, so the schedule composes with others.
        remaining_now = 1.0 - self.last_epoch / self.total_iters
        remaining_before = 1.0 - (self.last_epoch - 1) / self.total_iters
        ratio = (remaining_now / remaining_before) ** self.power
        return [lr * ratio for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        remaining = 1.0 - min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * remaining**self.power for base in self.base_lrs]


__all__ = ["ConstantLR", "MultiplicativeLR", "PolynomialLR"]
