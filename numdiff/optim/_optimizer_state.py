"""An optimizer's state dict: packing it (parameters numbered in group order) and loading one
(state cast to each parameter's dtype and device), with the optimizer's state-dict hooks around both."""

from __future__ import annotations

import copy
from collections import defaultdict
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from numdiff._dtype import float32
from numdiff.optim import _step_hooks
from numdiff.tensor import Tensor

if TYPE_CHECKING:
    from numdiff.optim.optimizer import Optimizer


def typename(value: Any) -> str:
    """How an error names a value's type: ``numdiff.Tensor`` for a tensor, as PyTorch's ``torch.Tensor``."""
    return "numdiff.Tensor" if isinstance(value, Tensor) else type(value).__name__


def pack(optimizer: Optimizer) -> dict[str, Any]:
    _step_hooks.run_state_dict_hooks(optimizer, "_optimizer_state_dict_pre_hooks")
    index: dict[int, int] = {}
    groups = []
    for group in optimizer.param_groups:
        packed = {k: v for k, v in group.items() if k != "params"}
        for p in group["params"]:
            index.setdefault(id(p), len(index))
        packed["params"] = [index[id(p)] for p in group["params"]]
        groups.append(packed)
    state = {index[id(p)]: s for p, s in optimizer.state.items() if isinstance(p, Tensor) and id(p) in index}
    return _step_hooks.run_state_dict_hooks(
        optimizer, "_optimizer_state_dict_post_hooks", {"state": state, "param_groups": groups}
    )


def load(optimizer: Optimizer, state_dict: dict[str, Any]) -> None:
    state_dict = _step_hooks.run_state_dict_hooks(
        optimizer, "_optimizer_load_state_dict_pre_hooks", state_dict
    )
    if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
        raise ValueError(
            "optimizer state dict must be a dict with keys 'state' and 'param_groups', got "
            + (
                f"keys {sorted(map(str, state_dict))}"
                if isinstance(state_dict, dict)
                else typename(state_dict)
            )
        )
    saved_groups = copy.deepcopy(state_dict["param_groups"])
    if len(saved_groups) != len(optimizer.param_groups):
        raise ValueError(
            "loaded state dict has a different number of parameter groups "
            f"({len(saved_groups)} saved, {len(optimizer.param_groups)} in this optimizer)"
        )
    for i, (group, saved) in enumerate(zip(optimizer.param_groups, saved_groups)):
        if len(group["params"]) != len(saved["params"]):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                f"optimizer's group (group {i}: {len(saved['params'])} saved, {len(group['params'])} here)"
            )
    id_map = dict(
        zip(
            chain.from_iterable(g["params"] for g in saved_groups),
            chain.from_iterable(g["params"] for g in optimizer.param_groups),
        )
    )
    state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
    for key, value in state_dict["state"].items():
        if key in id_map:
            param = id_map[key]
            state[param] = {k: _cast_state(param, v, k) for k, v in value.items()}
        else:
            state[key] = copy.deepcopy(value)
    for group, saved in zip(optimizer.param_groups, saved_groups):
        saved["params"] = group["params"]
    optimizer.state = state
    optimizer.param_groups = saved_groups
    _step_hooks.run_state_dict_hooks(optimizer, "_optimizer_load_state_dict_post_hooks")


def _cast_state(param: Tensor, value: Any, key: Any) -> Any:
    """A copy of one loaded state value, cast to match `param` the way PyTorch does.

    NumPy arrays and other libraries' tensors (anything with ``__array__``, such as a state dict
    of torch.optim) become numdiff tensors first.
    """
    if not isinstance(value, Tensor) and hasattr(value, "__array__") and hasattr(value, "shape"):
        value = Tensor._wrap(np.array(value), None, None)
    if isinstance(value, Tensor):
        if key == "step":
            out = value.detach().clone()
        elif param.is_floating_point():
            out = value.detach().to(dtype=param.dtype, device=param.device).clone()
        else:
            out = value.detach().to(device=param.device).clone()
        return out.contiguous()
    if key == "step" and isinstance(value, (int, float)):
        return step_tensor(float(value))
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v, key) for v in value)
    return copy.deepcopy(value)


def step_tensor(value: float = 0.0) -> Tensor:
    """The 0-d float32 step counter PyTorch keeps in optimizer state as ``state["step"]``."""
    return Tensor._wrap(np.array(value, dtype=float32.numpy), None, None)
