"""Activation checkpointing, as torch.utils.checkpoint: run a part of the model without keeping
its intermediate activations, and run it again during backward to get them.

``checkpoint(fn, *args)`` runs ``fn`` under no_grad, keeping only its inputs (and the random
state, so dropout draws the same masks when it runs again). Its backward reruns ``fn`` with
gradients on and backpropagates through that run: the gradients of the inputs come back from
the checkpoint, and those of the parameters ``fn`` uses accumulate into their ``.grad`` as usual.

    >>> layer = numdiff.nn.Linear(4, 4)
    >>> x = numdiff.randn(2, 4, requires_grad=True)
    >>> checkpoint(layer, x, use_reentrant=False).sum().backward()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from numdiff import _random
from numdiff.autograd import backward as run_backward
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import enable_grad, no_grad
from numdiff.tensor import Tensor


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx, function, preserve_rng_state, kwargs, count, *args_and_parameters):
        # The parameters ride along only so that the op records when no input requires grad;
        # their gradients accumulate during the rerun's own backward.
        args = args_and_parameters[:count]
        ctx.run_function, ctx.run_kwargs, ctx.parameter_count = function, kwargs, len(args_and_parameters) - count
        ctx.rng_state = _random.default_generator.numpy.bit_generator.state if preserve_rng_state else None
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.others = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with no_grad():
            outputs = function(*args, **kwargs)
        ctx.single = isinstance(outputs, Tensor)
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        saved = ctx.saved_tensors
        args = list(ctx.others)
        inputs = []
        for position, tensor in zip(ctx.tensor_positions, saved):
            copy = tensor.detach()
            copy.requires_grad_(tensor.requires_grad)
            args[position] = copy
            inputs.append(copy)
        generator = _random.default_generator
        current = generator.numpy.bit_generator.state
        if ctx.rng_state is not None:
            generator.numpy.bit_generator.state = ctx.rng_state
        try:
            with enable_grad():
                outputs = ctx.run_function(*args, **ctx.run_kwargs)
        finally:
            generator.numpy.bit_generator.state = current
        outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if pairs:
            run_backward([o for o, _ in pairs], [g for _, g in pairs])
        input_grads = iter(copy.grad if copy.requires_grad else None for copy in inputs)
        arg_grads = [next(input_grads) if i in ctx.tensor_positions else None for i in range(len(args))]
        return (None, None, None, None, *arg_grads, *([None] * ctx.parameter_count))


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None, context_fn: Any = None,
               determinism_check: str = "default", debug: bool = False, preserve_rng_state: bool = True, **kwargs: Any) -> Any:  # fmt: skip
    """``function(*args, **kwargs)``, with its activations recomputed in backward instead of kept.

    `use_reentrant` is accepted for PyTorch code; both settings behave the same here. With
    `preserve_rng_state`, the rerun draws the same random numbers (dropout masks) as the first run.
    """
    if not callable(function):
        raise TypeError(f"checkpoint: expected a callable, got {type(function).__name__}")
    parameters = [p for p in function.parameters() if p.requires_grad] if callable(getattr(function, "parameters", None)) else []
    return _Checkpoint.apply(function, preserve_rng_state, kwargs, len(args), *args, *parameters)


def checkpoint_sequential(functions: Any, segments: int, input: Tensor, use_reentrant: bool | None = None, **kwargs: Any) -> Tensor:
    """Run the modules of `functions` (a Sequential or a list) in `segments` checkpointed chunks;
    the last chunk runs normally, as in PyTorch."""
    modules: Sequence[Any] = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if not isinstance(segments, int) or segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be a positive int, got {segments!r}")
    size = max(len(modules) // segments, 1)

    def run(start: int, end: int) -> Callable[[Tensor], Tensor]:
        return _Segment(modules[start:end])

    end = 0
    for start in range(0, size * (segments - 1), size):
        end = start + size
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)
    return run(end, len(modules))(input)


class _Segment:
    """Modules run one after another, with their parameters (so a checkpoint of it records them)."""

    def __init__(self, modules: Sequence[Any]) -> None:
        self.modules = modules

    def __call__(self, x: Tensor) -> Tensor:
        for module in self.modules:
            x = module(x)
        return x

    def parameters(self) -> Any:
        return (p for m in self.modules for p in m.parameters())


__all__ = ["checkpoint", "checkpoint_sequential"]


def __dir__() -> list[str]:
    return sorted(__all__)
