"""The Optimizer base: parameter groups, per-parameter state, zero_grad and state dicts.

Parameters stay leaves: an optimizer writes new values straight into each parameter's storage
(through a fused kernel from numdiff.kernels.optim) with recording off, and bumps the
parameter's version counter like any in-place op, so a graph that saved the old value notices.
"""

from __future__ import annotations

import functools
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from numdiff import _profiling
from numdiff.autograd.grad_mode import enable_grad, no_grad
from numdiff.autograd.hooks import RemovableHandle
from numdiff.autograd.transform_state import anywhere, host_step
from numdiff.creation import full
from numdiff.optim import _optimizer_state, _step_hooks
from numdiff.optim._optimizer_state import step_tensor as step_tensor
from numdiff.optim._optimizer_state import typename as _typename
from numdiff.optim._step_hooks import register_optimizer_step_post_hook as register_optimizer_step_post_hook
from numdiff.optim._step_hooks import register_optimizer_step_pre_hook as register_optimizer_step_pre_hook
from numdiff.tensor import Tensor


class _RequiredParameter:
    """Marks a default that every parameter group must set itself."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _profiled_step(step: Callable[..., Any], name: str) -> Callable[..., Any]:
    def run(self: Optimizer, args: tuple, kwargs: dict) -> Any:
        if _profiling.recorder is None:
            return _step_hooks.run_with_hooks(self, step, args, kwargs)
        return _profiling.recorder.record(name, "optimizer",
                                          lambda: _step_hooks.run_with_hooks(self, step, args, kwargs))

    @functools.wraps(step)
    def profiled(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        if not anywhere.levels:
            return run(self, args, kwargs)
        # Through the interpreter door: numdiff.compile's trace replays the step after each call; a
        # step with a closure (which re-evaluates the model inside the step) it refuses.
        kind = "step" if all(a is None for a in (*args, *kwargs.values())) else "step(closure)"
        return host_step(self, kind, lambda: run(self, args, kwargs))

    return profiled


class SparseGradientError(RuntimeError):
    """An optimizer without a sparse path met a sparse gradient (an embedding's with sparse=True)."""


def sparse_refusal(name: str) -> str:
    """PyTorch's words for an optimizer that takes no sparse gradients.

    >>> sparse_refusal("RMSprop")
    'RMSprop does not support sparse gradients'
    """
    return f"{name} does not support sparse gradients"


class Optimizer:
    """Base class of all optimizers.

    `params` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts, each a parameter
    group with a ``"params"`` entry and options overriding `defaults`::

        optim.SGD([{"params": model.base.parameters()},
                   {"params": model.head.parameters(), "lr": 1e-3}], lr=1e-2, momentum=0.9)
    """

    sparse_gradient_refusal: str | None = None
    """The error for a sparse gradient where PyTorch words it differently from sparse_refusal's."""
    _sparse_step: Callable[[Tensor, Any, dict[str, Any]], None] | None = None
    """(param, sparse grad, group) -> None: the update for a sparse gradient, in optimizers that
    take them (SGD, Adagrad); _params_with_grad runs it and yields only the dense gradients."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Each optimizer's step shows in numdiff.profiler as "Optimizer.step#<Name>.step", as in torch.
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None:
            cls.step = _profiled_step(step, f"Optimizer.step#{cls.__name__}.step")

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                f"but got {_typename(params)}"
            )
        self.state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own options) to optimize from now on.

        >>> opt.add_param_group({"params": [w2], "lr": 0.01})
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering "
                "of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are missing"
                )
            param_group["param_names"] = names
        param_group["params"] = params
        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but param {i} of the group is {_typename(p)}"
                )
            if not (p.is_leaf or p.retains_grad):
                raise ValueError(
                    f"can't optimize a non-leaf Tensor (param {i} of the group, shape {tuple(p.shape)}, "
                    f"produced by {p.grad_fn.name()}); optimize the leaves it was computed from"
                )
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization parameter {name}"
                )
            param_group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this will "
                "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        existing = {id(p) for group in self.param_groups for p in group["params"]}
        for group in self.param_groups:
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if not existing.isdisjoint(id(p) for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def _compile_guarded_state(self) -> tuple:
        """What numdiff.compile guards about this optimizer: its parameters, group by group. Its
        options and state are read afresh by each replayed step (numdiff/compile/host_steps.py),
        so a scheduler changing lr needs no retrace."""
        return tuple(tuple(group["params"]) for group in self.param_groups)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's `.grad`: to None (the default), or to zeros in place."""
        if anywhere.levels:
            host_step(self, "zero_grad", lambda: self._zero_grad(set_to_none))
        else:
            self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none: bool) -> None:
        if set_to_none:
            for group in self.param_groups:
                for p in group["params"]:
                    p._grad = None
            return
        with no_grad():  # entered once for the whole model, not once per parameter
            for group in self.param_groups:
                for p in group["params"]:
                    grad = p._grad
                    if grad is None:
                        continue
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update the parameters once; `closure` re-evaluates the model and returns the loss."""
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` before each step; it may return ``(new_args, new_kwargs)``."""
        return _step_hooks.add_hook(_step_hooks.instance_registry(self, "_step_pre_hooks"), hook)

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` after each step."""
        return _step_hooks.add_hook(_step_hooks.instance_registry(self, "_step_post_hooks"), hook)

    def register_state_dict_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer)`` before `state_dict` packs the state."""
        return self._state_dict_hook("_optimizer_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` on what `state_dict` returns; a returned dict replaces it."""
        return self._state_dict_hook("_optimizer_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` before `load_state_dict` reads it; a returned dict is loaded instead."""
        return self._state_dict_hook("_optimizer_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer)`` after `load_state_dict` has loaded."""
        return self._state_dict_hook("_optimizer_load_state_dict_post_hooks", hook, prepend)

    def _state_dict_hook(self, kind: str, hook: Callable[..., Any], prepend: bool) -> RemovableHandle:
        return _step_hooks.add_hook(_step_hooks.instance_registry(self, kind), hook, prepend, kind="state dict")

    @staticmethod
    def _eval_closure(closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # ----------------------------------------------------------------- state dicts
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{options..., "params": [index, ...]}]}``.

        Parameters are numbered in group order; state values are the live tensors (not copies).
        """
        return _optimizer_state.pack(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore options and state saved by `state_dict` (from an optimizer over like-shaped params).

        State tensors are copied, cast to each parameter's dtype and device (``"step"`` keeps its
        own); the current parameter tensors are kept.
        """
        _optimizer_state.load(self, state_dict)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled state, without the per-instance ``step`` wrapper an lr scheduler adds (it holds
        a weak reference; a new scheduler wraps the unpickled optimizer again) or the hooks
        (PyTorch pickles none either)."""
        return {key: value for key, value in self.__dict__.items()
                if key != "step" and key not in _step_hooks.INSTANCE_REGISTRIES}

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {key}: {group[key]}" for key in sorted(group) if key != "params")
        lines.append(")")
        return "\n".join(lines)

    # ----------------------------------------------------------------- helpers for subclasses
    def _params_with_grad(self, group: dict[str, Any]) -> Iterator[tuple[Tensor, Any]]:
        """(param, flat contiguous gradient array) for each parameter of `group` that has a dense grad;
        a sparse grad is updated here by `_sparse_step`, or refused with PyTorch's words."""
        for p in group["params"]:
            grad = p._grad
            if grad is None:
                continue
            try:
                data = grad._data
            except AttributeError:  # a sparse gradient: no one array to hand the group's kernel
                if self._sparse_step is None:
                    raise SparseGradientError(self.sparse_gradient_refusal or sparse_refusal(type(self).__name__)) from None
                self._sparse_step(p, grad, group)
                continue
            yield p, (data if data.flags.c_contiguous else data.copy()).reshape(-1)


def increment_step(step: Tensor) -> float:
    """Add one to a step counter in place and return the new count."""
    data = step._data
    data[...] = data + 1
    step._version_counter[0] += 1
    return float(data)


def zeros_state(param: Tensor, fill: float = 0.0) -> Tensor:
    """A contiguous state buffer shaped, typed and placed like `param`, filled with `fill`."""
    return full(tuple(param.shape), fill, dtype=param.dtype, device=param.device)


def flat_state(param: Tensor, buffer: Tensor, name: str) -> Any:
    """The flat array of a state buffer, which a kernel will update in place."""
    data = buffer._data
    if tuple(data.shape) != tuple(param._data.shape):
        raise ValueError(
            f"optimizer state {name!r} has shape {tuple(data.shape)} but its parameter has shape "
            f"{tuple(param.shape)}; was the state dict loaded into an optimizer over other parameters?"
        )
    if not data.flags.c_contiguous:
        raise ValueError(f"optimizer state {name!r} is not contiguous (strides {data.strides})")
    return data.reshape(-1)


def check_implementation_flags(
    optimizer: str, *, foreach: Any = None, capturable: bool = False, differentiable: bool = False, fused: Any = None
) -> None:
    """PyTorch's arguments that choose among its implementations of a step. numdiff has one per
    optimizer (a fused kernel call per parameter group for SGD, Adam, AdamW, RMSprop and Adagrad,
    tensor ops for the others), so `foreach` and `fused` are accepted and change nothing; a step
    captured in a CUDA graph (`capturable`) or recorded by autograd (`differentiable`) does not
    exist here, so asking for one is an error."""
    for name, value in (("foreach", foreach), ("fused", fused)):
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"{optimizer}: {name} must be None, True or False, got {value!r}")
    if capturable:
        raise ValueError(f"{optimizer}: capturable=True (a step captured in a CUDA graph) is not supported by numdiff")
    if differentiable:
        raise ValueError(f"{optimizer}: differentiable=True (a step recorded by autograd) is not supported by numdiff")
