"""NumPy's argument names that PyTorch's native functions also accept: ``axis`` for ``dim`` and
``keepdims`` for ``keepdim``, so ``counts.sum(1, keepdims=True)``, ``torch.cat(xs, axis=0)`` and
``x.max(axis=1)`` run as in PyTorch. PyTorch's functions written in Python (``split``, ``norm``,
``roll``, ``nn.functional.softmax``...) refuse them, and so does numdiff: the lists below are
the functions and methods for which PyTorch 2.13 accepts each name (found by calling them all).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["function_renames", "install_methods"]

_REDUCING = (
    "all", "amax", "amin", "aminmax", "any", "argmax", "argmin", "kthvalue", "logsumexp", "max", "mean",
    "median", "min", "mode", "nanmean", "nanmedian", "nanquantile", "nansum", "prod", "quantile", "std", "sum",
    "var",
)
# Methods and functions taking `axis` for `dim` (the reductions above also take `keepdims`).
_AXIS_METHODS = _REDUCING + (
    "argsort", "chunk", "count_nonzero", "cummax", "cummin", "cumprod", "cumsum", "diff", "gather", "index_add",
    "index_copy", "index_fill", "index_select", "log_softmax", "logcumsumexp", "narrow", "repeat_interleave",
    "scatter", "scatter_add", "scatter_reduce", "select", "size", "slice_scatter", "softmax", "sort",
    "split_with_sizes", "squeeze", "stride", "take_along_dim", "tensor_split", "topk", "unbind", "unsafe_chunk",
    "unsafe_split", "unsafe_split_with_sizes", "unsqueeze",
)
_AXIS_FUNCTIONS = _REDUCING + (
    "argsort", "cat", "chunk", "concat", "concatenate", "count_nonzero", "cross", "cummax", "cummin", "cumprod",
    "cumsum", "cumulative_trapezoid", "diff", "gather", "gradient", "index_add", "index_copy", "index_fill",
    "index_select", "log_softmax", "logcumsumexp", "narrow", "repeat_interleave", "scatter", "scatter_add",
    "scatter_reduce", "select", "select_scatter", "slice_scatter", "softmax", "sort", "split_with_sizes",
    "squeeze", "stack", "std_mean", "take_along_dim", "tensor_split", "topk", "trapezoid", "trapz", "unbind",
    "unflatten", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "unsqueeze", "var_mean",
)
_KEEPDIMS_FUNCTIONS = _REDUCING + ("std_mean", "var_mean")


def _accepting(fn: Callable[..., Any], renames: tuple[tuple[str, str], ...]) -> Callable[..., Any]:
    """`fn`, also taking each ``(alias, name)`` of `renames` by its alias. Calls without keywords
    pay one test of an empty dict."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            for alias, name in renames:
                if alias in kwargs:
                    if name in kwargs:
                        raise TypeError(f"{fn.__name__}() got both {name!r} and {alias!r}, its NumPy name")
                    kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)

    for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(call, attribute, getattr(fn, attribute, None))
    call.__wrapped__ = fn
    return call


def _parameters(fn: Any) -> tuple[str, ...]:
    while hasattr(fn, "__wrapped__"):  # through out= and numdiff.overrides' wrappers
        fn = fn.__wrapped__
    code = getattr(fn, "__code__", None)
    return code.co_varnames[: code.co_argcount + code.co_kwonlyargcount] if code is not None else ()


def _renames(fn: Any, axis: bool, keepdims: bool) -> tuple[tuple[str, str], ...]:
    names = _parameters(fn)
    renames = []
    if axis and "dim" in names:
        renames.append(("axis", "dim"))
    if keepdims and "keepdim" in names:
        renames.append(("keepdims", "keepdim"))
    return tuple(renames)


def install_methods(tensor_class: type) -> None:
    """Let the Tensor methods named above take the NumPy names, at import, before anything else
    wraps them."""
    for name in _AXIS_METHODS:
        method = tensor_class.__dict__.get(name)
        renames = _renames(method, True, name in _REDUCING) if callable(method) else ()
        if renames:
            setattr(tensor_class, name, _accepting(method, renames))


def function_renames(name: str, fn: Any) -> tuple[tuple[str, str], ...]:
    """The ``(NumPy name, parameter)`` pairs the numdiff function `name` (`fn`) takes: none for
    functions that PyTorch does not let take them. numdiff.overrides.exported applies them."""
    if name not in _AXIS_FUNCTIONS or not callable(fn):
        return ()
    return _renames(fn, True, name in _KEEPDIMS_FUNCTIONS)
