"""Helpers for optimizers written with tensor ops (Adadelta, Adamax, NAdam, RAdam).

These run the update as a few NumPy-backed tensor expressions instead of a fused Numba kernel:
they work on any device numdiff ops do, and their small per-step cost is dominated by the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from numdiff.optim.optimizer import SparseGradientError, sparse_refusal
from numdiff.tensor import Tensor


def check_nonnegative(values: dict[str, float]) -> None:
    """PyTorch's argument checks: ``Invalid <what>: <value>`` for the first negative option, where
    `values` maps PyTorch's words for each option ("learning rate", "weight_decay value") to it."""
    for what, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {what}: {value}")


def check_betas(betas: tuple[float, float]) -> None:
    if len(betas) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


def gradients(group: dict[str, Any], optimizer: str) -> Iterator[tuple[Tensor, Tensor]]:
    """(param, gradient as a constant tensor, negated under ``maximize``) for params with a grad;
    a sparse gradient is refused with PyTorch's words, naming the `optimizer`."""
    for p in group["params"]:
        if p._grad is None:
            continue
        if not isinstance(p._grad, Tensor):
            raise SparseGradientError(sparse_refusal(optimizer))
        grad = p._grad.detach()
        yield p, (-grad if group.get("maximize", False) else grad)


def store(target: Tensor, value: Tensor) -> None:
    """Write `value` into `target`'s storage (a parameter or a state buffer), bumping its version."""
    target._data[...] = value._data
    target._version_counter[0] += 1
