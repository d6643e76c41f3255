"""PyTorch's ``out=`` keyword on the numdiff.* functions that take it (``torch.matmul(a, b, out=c)``).

The function computes its result as usual, then writes it into `out` (a tensor, or a tuple of
tensors for functions with several results) and returns `out`. As in PyTorch: the result is cast
to `out`'s dtype when the cast is safe in kind (float into int is refused), `out` is resized
when its shape differs (with a warning unless it was empty), and ``out=`` is refused while
recording gradients for an input that requires grad (the write cannot be differentiated).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff import _dtype
from numdiff.autograd.grad_mode import is_grad_enabled, no_grad
from numdiff.tensor import Tensor

# numdiff.* functions that accept out= in PyTorch.
OUT_FUNCTIONS = (
    "abs", "absolute", "acos", "add", "addcdiv", "addcmul", "addmm", "addmv", "amax", "amin", "argmax", "argmin",
    "asin", "atan", "atan2", "arctan2", "baddbmm", "bmm", "cat", "ceil", "clamp", "clip", "concat", "cos", "cosh",
    "cross", "cummax", "cummin", "cumprod", "cumsum", "diag", "div", "divide", "dot", "eq", "erf", "exp", "exp2",
    "expm1", "floor", "floor_divide", "fmod", "ge", "gt", "hstack", "index_select", "inner", "kron", "le",
    "lerp", "log", "log10", "log1p", "log2", "logical_and", "logical_not", "logical_or", "logical_xor",
    "logsumexp", "lt", "matmul", "max", "maximum", "mean", "min", "minimum", "mm", "mul", "multiply", "ne",
    "neg", "negative", "outer", "pow", "prod", "reciprocal", "remainder", "round", "rsqrt", "sigmoid", "sign",
    "sin", "sinh", "sort", "sqrt", "square", "stack", "std", "sub", "subtract", "sum", "tan", "tanh", "topk",
    "tril", "triu", "true_divide", "trunc", "var", "vstack", "where",
)  # fmt: skip


def _write(name: str, result: Any, out: Any) -> Any:
    if isinstance(out, (tuple, list)):
        if not isinstance(result, tuple) or len(result) != len(out):
            raise TypeError(f"{name}: out= must be a tensor here, got a {type(out).__name__} of {len(out)}")
        return type(out)(_write(name, r, o) for r, o in zip(result, out))
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if isinstance(result, tuple):  # max/min/sort with dim: PyTorch takes out=(values, indices)
        raise TypeError(f"{name}: this call returns {len(result)} tensors, so out= must be a tuple of as many")
    source, target = result._data.dtype, out._data.dtype
    # PyTorch's rule, as in-place ops (an int64 result into a uint8 out= is allowed, float into int
    # is not); NumPy's same_kind refuses signed into unsigned.
    if not (_dtype.can_store(source, target) if source.kind in "buifV" and target.kind in "buifV" else np.can_cast(source, target, casting="same_kind")):
        raise RuntimeError(f"{name}: result type {result.dtype!r} can't be cast to the desired output type {out.dtype!r}")
    with no_grad():
        if tuple(out.shape) != tuple(result.shape):
            if out.numel():
                warnings.warn(
                    f"{name}: an output with one or more elements was resized since it had shape {tuple(out.shape)}, "
                    f"which does not match the required output shape {tuple(result.shape)}.",
                    UserWarning, stacklevel=3,
                )
            out._data = result.to(out.dtype)._data.copy()
            out._version_counter[0] += 1
        else:
            out.copy_(result)
    return out


def write_out(name: str, call: Callable[..., Any], args: tuple, kwargs: dict, out: Any) -> Any:
    """``call(*args, **kwargs)`` written into `out` (see the module docstring): the out= path of the
    exported function `name` (numdiff.overrides.exported), refused while recording gradients."""
    if is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in (*args, *kwargs.values())):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic differentiation, but one "
            "of the arguments requires grad. Call it without out=, or inside numdiff.no_grad()."
        )
    return _write(name, call(*args, **kwargs), out)
