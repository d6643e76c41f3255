"""Module backward hooks, PyTorch's register_full_backward_hook and register_full_backward_pre_hook.

A module with such hooks gets one forward pre-hook and one forward hook (installed on the first
registration) that route its tensor inputs and outputs through identity Functions: the outputs'
backward sees grad_output (the pre-hooks may replace it), the inputs' backward sees grad_input
and calls ``hook(module, grad_input, grad_output)``, whose tuple may replace grad_input. When no
input needs a gradient, the hooks run from the outputs' backward with grad_input all None, as
PyTorch's do. Calls nest (a cell applied in a loop): each call keeps its own record.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import is_grad_enabled
from numdiff.autograd.hooks import RemovableHandle
from numdiff.tensor import Tensor

if TYPE_CHECKING:
    from numdiff.nn.modules.module import Module


class _Call:
    """One forward call's record: which positional arguments are tensors, and grad_output once known."""

    def __init__(self, module: Module, arguments: int, wrapped: list[int]) -> None:
        self.module = module
        self.arguments = arguments  # grad_input has one entry per positional argument (None if not a tensor)
        self.wrapped = wrapped  # the positions routed through _Inputs (tensors that require grad)
        self.grad_output: tuple = ()


def _run_hooks(call: _Call, grad_input: tuple) -> tuple:
    module = call.module
    for hook in tuple(module._full_backward_hooks.values()):
        result = hook(module, grad_input, call.grad_output)
        if result is None:
            continue
        result = result if isinstance(result, tuple) else (result,)
        if len(result) != len(grad_input):
            raise RuntimeError(
                f"backward hook of {type(module).__name__} returned {len(result)} gradients, but the module's "
                f"forward has {len(grad_input)} positional inputs: return None or one gradient (or None) per input"
            )
        grad_input = result
    return grad_input


class _Outputs(Function):
    @staticmethod
    def forward(ctx, call: _Call, *outputs: Tensor) -> Any:
        ctx.call = call
        copies = tuple(t.view_as(t) for t in outputs)
        return copies if len(copies) > 1 else copies[0]

    @staticmethod
    def backward(ctx, *grads: Any) -> tuple:
        call = ctx.call
        module = call.module
        for hook in tuple(module._full_backward_pre_hooks.values()):
            result = hook(module, grads)
            if result is not None:
                result = result if isinstance(result, tuple) else (result,)
                if len(result) != len(grads):
                    raise RuntimeError(
                        f"backward pre-hook of {type(module).__name__} returned {len(result)} gradients for "
                        f"{len(grads)} outputs: return None or one gradient per output"
                    )
                grads = result
        call.grad_output = grads
        if not call.wrapped and module._full_backward_hooks:
            _run_hooks(call, (None,) * call.arguments)
        return (None, *grads)


class _Inputs(Function):
    @staticmethod
    def forward(ctx, call: _Call, *inputs: Tensor) -> Any:
        ctx.call = call
        copies = tuple(t.view_as(t) for t in inputs)
        return copies if len(copies) > 1 else copies[0]

    @staticmethod
    def backward(ctx, *grads: Any) -> tuple:
        call = ctx.call
        by_position = dict(zip(call.wrapped, grads))
        grad_input = _run_hooks(call, tuple(by_position.get(i) for i in range(call.arguments)))
        return (None, *(grad_input[i] for i in call.wrapped))


def _before_forward(module: Module, args: tuple) -> tuple | None:
    stack = module.__dict__["_backward_hook_calls"]
    if not is_grad_enabled():
        stack.append(None)
        return None
    wrapped = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    stack.append(_Call(module, len(args), wrapped))
    if not wrapped:
        return None
    routed = _Inputs.apply(stack[-1], *(args[i] for i in wrapped))
    routed = routed if isinstance(routed, tuple) else (routed,)
    args = list(args)
    for i, tensor in zip(wrapped, routed):
        args[i] = tensor
    return tuple(args)


def _after_forward(module: Module, args: tuple, output: Any) -> Any:
    call = module.__dict__["_backward_hook_calls"].pop()
    if call is None:
        return None
    outputs = output if isinstance(output, tuple) else (output,)
    positions = [i for i, t in enumerate(outputs) if isinstance(t, Tensor) and t.requires_grad]
    if not positions:
        return None
    routed = _Outputs.apply(call, *(outputs[i] for i in positions))
    routed = routed if isinstance(routed, tuple) else (routed,)
    if not isinstance(output, tuple):
        return routed[0]
    replaced = list(outputs)
    for i, tensor in zip(positions, routed):
        replaced[i] = tensor
    return tuple(replaced)


def add_backward_hook(module: Module, registry_name: str, hook: Callable[..., Any], prepend: bool) -> RemovableHandle:
    """Register `hook` in the module's `registry_name` dict, installing the forward hooks that
    route gradients through it on the module's first backward hook."""
    if not callable(hook):
        raise TypeError(f"hook must be callable, got {type(hook).__name__}")
    state = module.__dict__
    if "_full_backward_hooks" not in state:
        object.__setattr__(module, "_full_backward_hooks", OrderedDict())
        object.__setattr__(module, "_full_backward_pre_hooks", OrderedDict())
        object.__setattr__(module, "_backward_hook_calls", [])
        module.register_forward_pre_hook(_before_forward)
        module.register_forward_hook(_after_forward)
    registry = state[registry_name]
    handle = RemovableHandle(registry)
    registry[handle.id] = hook
    if prepend:
        registry.move_to_end(handle.id, last=False)
    return handle
