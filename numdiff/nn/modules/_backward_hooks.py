"""Module backward hooks: a module's own, PyTorch's register_full_backward_hook and
register_full_backward_pre_hook, and the global ones on every module, PyTorch's
register_module_full_backward_hook and register_module_full_backward_pre_hook (global hooks run
before the module's own, as PyTorch runs them).

Module._call_with_hooks routes a hooked module's tensor inputs and outputs through identity
Functions, after its forward pre-hooks and after its forward hooks, where PyTorch does: the
outputs' backward sees grad_output (the pre-hooks may replace it), the inputs' backward sees
grad_input and calls ``hook(module, grad_input, grad_output)``, whose tuple may replace
grad_input. When no input needs a gradient, the hooks run from the outputs' backward with
grad_input all None, as PyTorch's do. Each call keeps its own record, so calls nest (a cell
applied in a loop). The hooks are read when the gradients arrive.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import is_grad_enabled
from numdiff.autograd.hooks import RemovableHandle
from numdiff.nn.modules._module_hooks import add_hook
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


backward_hooks: OrderedDict = OrderedDict()  # the global ones, on every module
backward_pre_hooks: OrderedDict = OrderedDict()


def _hooks(module: Module, own: str, global_registry: OrderedDict) -> tuple:
    registry = module.__dict__.get(own)
    return (*global_registry.values(), *registry.values()) if registry else tuple(global_registry.values())


def wanted(module: Module) -> bool:
    """Whether a call of `module` routes its gradients through backward hooks."""
    state = module.__dict__
    return bool(backward_hooks or backward_pre_hooks or state.get("_full_backward_hooks")
                or state.get("_full_backward_pre_hooks"))


def _run_hooks(call: _Call, grad_input: tuple) -> tuple:
    module = call.module
    for hook in _hooks(module, "_full_backward_hooks", backward_hooks):
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
        for hook in _hooks(module, "_full_backward_pre_hooks", backward_pre_hooks):
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
        if not call.wrapped and _hooks(module, "_full_backward_hooks", backward_hooks):
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


def route_inputs(module: Module, args: tuple) -> tuple[_Call | None, tuple]:
    """The call's record (None when grad mode is off) and its arguments, those that require grad
    routed through _Inputs."""
    if not is_grad_enabled():
        return None, args
    wrapped = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    call = _Call(module, len(args), wrapped)
    if not wrapped:
        return call, args
    routed = _Inputs.apply(call, *(args[i] for i in wrapped))
    routed = routed if isinstance(routed, tuple) else (routed,)
    args = list(args)
    for i, tensor in zip(wrapped, routed):
        args[i] = tensor
    return call, tuple(args)


def route_outputs(call: _Call, output: Any) -> Any:
    """`output` with its tensors that require grad routed through _Outputs."""
    outputs = output if isinstance(output, tuple) else (output,)
    positions = [i for i, t in enumerate(outputs) if isinstance(t, Tensor) and t.requires_grad]
    if not positions:
        return output
    routed = _Outputs.apply(call, *(outputs[i] for i in positions))
    routed = routed if isinstance(routed, tuple) else (routed,)
    if not isinstance(output, tuple):
        return routed[0]
    replaced = list(outputs)
    for i, tensor in zip(positions, routed):
        replaced[i] = tensor
    return tuple(replaced)


def add_backward_hook(module: Module, registry_name: str, hook: Callable[..., Any], prepend: bool) -> RemovableHandle:
    """Register `hook` in the module's `registry_name` dict (made on the module's first backward hook)."""
    state = module.__dict__
    if "_full_backward_hooks" not in state:
        object.__setattr__(module, "_full_backward_hooks", OrderedDict())
        object.__setattr__(module, "_full_backward_pre_hooks", OrderedDict())
    return add_hook(state[registry_name], hook, prepend)


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, grad_input, grad_output)`` on every module's backward, before the
    module's own backward hooks; a returned tuple replaces grad_input.

    >>> handle = register_module_full_backward_hook(lambda module, grad_input, grad_output: None)
    >>> handle.remove()
    """
    return add_hook(backward_hooks, hook, prepend=False)


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, grad_output)`` when the gradients of any module's outputs arrive, before
    the module's own backward pre-hooks; a returned tuple replaces grad_output.

    >>> handle = register_module_full_backward_pre_hook(lambda module, grad_output: None)
    >>> handle.remove()
    """
    return add_hook(backward_pre_hooks, hook, prepend=False)
