"""What the Adam family (Adam, AdamW, Adamax, NAdam, RAdam) shares: the argument checks and
defaults, the first step's state, and, for the ones written with tensor ops, weight decay and the
moment updates. Each optimizer's own file keeps only the step rule that makes it different.
"""

from __future__ import annotations

from typing import Any

from numdiff.optim._tensor_update import check_betas, check_nonnegative, store
from numdiff.optim.optimizer import step_tensor, zeros_state
from numdiff.tensor import Tensor


def adam_family_defaults(
    lr: float,
    betas: tuple[float, float],
    eps: float,
    weight_decay: float,
    **options: Any,
) -> dict[str, Any]:
    """Check the shared options in PyTorch's order (lr, eps, betas, weight_decay) and return the
    group defaults, the optimizer's own `options` last.

    >>> adam_family_defaults(1e-3, (0.9, 0.999), 1e-8, 0, maximize=False)["betas"]
    (0.9, 0.999)
    """
    check_nonnegative({"learning rate": lr, "epsilon value": eps})
    check_betas(betas)
    check_nonnegative({"weight_decay value": weight_decay})
    return {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, **options}


def start_state(state: dict[str, Any], param: Tensor, *buffers: str, **scalars: float) -> None:
    """On a parameter's first step: the 0-d ``step`` counter, then 0-d `scalars`, then zero
    `buffers` shaped like `param` (the key order PyTorch's state_dict has). Later steps: nothing.

    >>> start_state(state, p, "exp_avg", "exp_avg_sq")
    """
    if len(state) != 0:
        return
    state["step"] = step_tensor()
    for name, value in scalars.items():
        state[name] = step_tensor(value)
    for name in buffers:
        state[name] = zeros_state(param)


def apply_weight_decay(param: Tensor, grad: Tensor, group: dict[str, Any]) -> Tensor:
    """The gradient after weight decay: ``grad + weight_decay * p``, or, with
    ``decoupled_weight_decay``, `grad` unchanged and ``p *= 1 - lr * weight_decay`` in place.

    >>> grad = apply_weight_decay(p, grad, group)
    """
    weight_decay = group["weight_decay"]
    if weight_decay == 0:
        return grad
    if group.get("decoupled_weight_decay", False):
        store(param, param.detach() * (1 - group["lr"] * weight_decay))
        return grad
    return grad + weight_decay * param.detach()


def update_first_moment(exp_avg: Tensor, grad: Tensor, beta1: float) -> None:
    """``m = lerp(m, g, 1 - beta1)`` in place.

    >>> update_first_moment(state["exp_avg"], grad, 0.9)
    """
    store(exp_avg, exp_avg + (grad - exp_avg) * (1 - beta1))


def update_second_moment(exp_avg_sq: Tensor, grad: Tensor, beta2: float) -> None:
    """``v = beta2 * v + (1 - beta2) * g * g`` in place.

    >>> update_second_moment(state["exp_avg_sq"], grad, 0.999)
    """
    store(exp_avg_sq, exp_avg_sq * beta2 + grad * grad * (1 - beta2))
