"""Stochastic weight averaging and exponential moving averages of a model's weights, as
torch.optim.swa_utils: ``AveragedModel`` keeps the running average, ``SWALR`` anneals the
learning rate to a constant SWA rate, ``update_bn`` recomputes BatchNorm statistics for the
averaged weights."""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any

from numdiff import _dtype, creation
from numdiff.autograd.grad_mode import no_grad
from numdiff.nn.modules.module import Module
from numdiff.nn.modules.normalization import _BatchNorm
from numdiff.optim.lr_scheduler import LRScheduler
from numdiff.optim.optimizer import Optimizer
from numdiff.tensor import Tensor


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[list, list, Any], None]:
    """An averaging function for AveragedModel(multi_avg_fn=...): ema = decay * ema + (1 - decay) * p."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list: list[Tensor], current_param_list: list[Tensor], num_averaged: Any) -> None:
        for ema, current in zip(ema_param_list, current_param_list):
            ema.copy_(ema * decay + current * (1.0 - decay))

    return ema_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """An averaging function for AveragedModel(avg_fn=...): returns decay * ema + (1 - decay) * p."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return ema_param * decay + current_param * (1.0 - decay)

    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Any], Tensor]:
    """An averaging function for AveragedModel(avg_fn=...): the equal-weight running mean."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _check_decay(decay: float) -> None:
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"the EMA decay must be in [0, 1], got {decay!r}")


class AveragedModel(Module):
    """A copy of `model` whose parameters (and buffers, with `use_buffers`) are the running average
    of `model`'s over the calls of ``update_parameters(model)``: the equal-weight mean by default,
    or what `avg_fn` / `multi_avg_fn` say (an EMA, say)."""

    def __init__(self, model: Module, device: Any = None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:  # fmt: skip
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError("AveragedModel: give avg_fn or multi_avg_fn, not both")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", creation.tensor(0, dtype=_dtype.int64, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _tracked(self, model: Module) -> Iterable[Tensor]:
        if self.use_buffers:
            return itertools.chain(model.parameters(), model.buffers())
        return model.parameters()

    def update_parameters(self, model: Module) -> None:
        """Fold `model`'s current weights into the average."""
        averaged = [p.detach() for p in self._tracked(self.module)]
        current = [p.detach().to(a.device) for p, a in zip(self._tracked(model), averaged)]
        count = int(self.n_averaged.item())
        with no_grad():
            if count == 0:
                for a, c in zip(averaged, current):
                    a.copy_(c)
            elif self.multi_avg_fn is not None:
                floating = [(a, c) for a, c in zip(averaged, current) if a.is_floating_point()]
                self.multi_avg_fn([a for a, _ in floating], [c for _, c in floating], self.n_averaged)
            else:
                update = self.avg_fn or get_swa_avg_fn()
                for a, c in zip(averaged, current):
                    if a.is_floating_point():
                        a.copy_(update(a, c, self.n_averaged))
            if not self.use_buffers:  # buffers follow the model as they are (BatchNorm's statistics)
                for mine, theirs in zip(self.module.buffers(), model.buffers()):
                    mine.copy_(theirs.detach().to(mine.device))
            self.n_averaged.add_(1)


@no_grad()
def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the running statistics of `model`'s BatchNorm layers with one pass over `loader`
    (the first element of each batch that is a list or tuple is the input)."""
    norms = [m for m in model.modules() if isinstance(m, _BatchNorm)]
    if not norms:
        return
    momenta = {}
    for norm in norms:
        norm.reset_running_stats()
        momenta[norm] = norm.momentum
        norm.momentum = None  # a cumulative average over the pass
    was_training = model.training
    model.train()
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for norm, momentum in momenta.items():
        norm.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's learning rate from its value to `swa_lr` over `anneal_epochs` steps
    ("cos" or "linear"), then holds it there."""

    def __init__(self, optimizer: Optimizer, swa_lr: Any, anneal_epochs: int = 10, anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        groups = optimizer.param_groups
        swa_lrs = list(swa_lr) if isinstance(swa_lr, (list, tuple)) else [swa_lr] * len(groups)
        if len(swa_lrs) != len(groups):
            raise ValueError(f"SWALR: swa_lr has {len(swa_lrs)} values for {len(groups)} parameter groups")
        for group, value in zip(groups, swa_lrs):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"SWALR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"SWALR: anneal_epochs must be a non-negative int, got {anneal_epochs!r}")
        self.anneal_func = self._cosine if anneal_strategy == "cos" else self._linear
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear(t: float) -> float:
        return t

    @staticmethod
    def _cosine(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _start_lr(lr: float, swa_lr: float, alpha: float) -> float:
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        before = self.anneal_func(max(0.0, min(1.0, (step - 1) / max(1, self.anneal_epochs))))
        starts = [self._start_lr(group["lr"], group["swa_lr"], before) for group in self.optimizer.param_groups]
        now = self.anneal_func(max(0.0, min(1.0, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * now + lr * (1 - now) for group, lr in zip(self.optimizer.param_groups, starts)]


__all__ = ["SWALR", "AveragedModel", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn", "update_bn"]


def __dir__() -> list[str]:
    return sorted(__all__)
