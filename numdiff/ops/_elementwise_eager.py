"""The elementwise ops' eager fast path: a whole op in one frame, for the operands most calls pass.

An elementwise op called on float32/float64 host tensors of one dtype (or a tensor and a Python
number), with no numdiff.func transform, compile trace or profiler active, needs none of the general
path's work: no operand normalisation (promotion, device checks, NumPy and sparse operands), no
interpreter dispatch, no argument loop in Function.apply, no forward closure, and no search that maps
the arrays forward saved back to their tensors (`_bind_saved`). The function made here computes the
result with the op's ufunc (or its contiguous loop) and records the node itself, saving exactly the
operands the needed derivatives read (the rule's `save_plan`). Every other call, and any call whose
ufunc raises (operands that do not broadcast, an int too large for the dtype), goes to the op's
general function, which validates and raises the clear errors.

Measured on float32[16], one thread (thread CPU time): ``y * s`` on a recorded `y` 5.7 -> 2.0 us.
tests/ops/test_elementwise_eager.py checks that both paths record the same node.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff import _profiling
from numdiff.autograd import anomaly, graph
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import _state
from numdiff.autograd.node import Node, _SavedNumber, _SavedOutput, leaf_accumulator, pack_saved
from numdiff.autograd.transform_state import anywhere
from numdiff.autograd.views import check_view_is_current
from numdiff.backend import is_host
from numdiff.ops._ufunc_split import SPLIT_MIN_ELEMENTS, threaded_ufunc
from numdiff.tensor import Tensor

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_new = object.__new__
_OUT = -1  # in a save plan: the op's output


def _in_place_of(public: Callable[..., Tensor], general: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """`public` with `general`'s name, docstring, attributes and signature, but no ``__wrapped__``
    link to it: the export wrappers and the protocol's public faces (numdiff.overrides) take `public`
    for the op's function itself, as `general` was before. ``public.general`` is `general`."""
    for name in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(public, name, getattr(general, name))
    public.__dict__.update(general.__dict__)
    public.__signature__ = inspect.signature(general)
    public.general = general
    return public


def _leaf_edge(t: Tensor) -> Any:
    """The AccumulateGrad node of leaf `t` (requires grad), or None when it does not."""
    if not t._requires_grad:
        return None
    ref = t._grad_accumulator
    node = ref() if ref is not None else None
    return leaf_accumulator(t) if node is None else node


def _result(out: Any) -> Tensor:
    t = _new(Tensor)
    t._data = np.asarray(out) if isinstance(out, np.generic) else out  # 0-d operands give a NumPy scalar
    t._grad_fn = None
    t._requires_grad = False
    t._grad = None
    t._version_counter = [0]
    t._retains_grad = False
    t._hooks = None
    t._grad_accumulator = None
    t._base = None
    t._post_accumulate_hooks = None
    return t


def _record(function: type[Function], result: Tensor, next_nodes: list, shapes: list, needs: tuple,
            operands: tuple) -> None:
    """Make `result` the output of a node of `function` over `operands` (tensors or numbers),
    saving what ``function.save_plan(needs)`` names, as Function.apply and _bind_saved would."""
    node = _new(Node)
    node.function = function
    node.attrs = {}
    node.next_nodes = next_nodes
    node.input_shapes = shapes
    node.needs_input_grad = needs
    plan = function.save_plans.get(needs)
    if plan is None:
        plan = function.save_plan(needs)
    if plan:
        saved = []
        versions = []
        for index in plan:
            if index is None:
                saved.append(None)
                versions.append(None)
            elif index == _OUT:
                saved.append(_SavedOutput(result._data, result._version_counter))
                versions.append(0)
            else:
                item = operands[index]
                if type(item) is float or type(item) is int:
                    saved.append(_SavedNumber(item, result._data))
                    versions.append(None)
                else:
                    saved.append(item)
                    versions.append(item._version_counter[0])
        node._saved = saved
        node._saved_versions = versions
    else:
        node._saved = ()
        node._saved_versions = ()
    node._freed = False
    if anomaly._state.enabled:
        node.creation_site = anomaly.creation_site()
    result._grad_fn = node
    result._requires_grad = True
    if plan and graph.pairs_anywhere and graph.active_pair() is not None:
        pack_saved(node)


def binary(function: type[Function], ufunc: Callable[..., Any], general: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """`general(input, other, **options)` with the eager fast path in front (module docstring); a
    call with options (add's alpha) goes to `general`. From SPLIT_MIN_ELEMENTS elements the
    ufunc's threaded form computes (numdiff.ops._ufunc_split); asked only then, it costs the small
    calls nothing (its extra frame was 0.16 us a call)."""
    large = threaded_ufunc(function.rule, ufunc)

    def public(input: Any, other: Any, **options: Any) -> Tensor:
        # A transform or a compile trace sees each op through Function.apply: straight to general.
        if options or anywhere.levels:
            return general(input, other, **options)
        if isinstance(input, Tensor):
            a = array = input._data
            if isinstance(other, Tensor):
                b = other._data
                if not is_host(b) or b.dtype is not a.dtype:
                    return general(input, other)
            elif type(other) is float or type(other) is int:
                b = other
            else:
                return general(input, other)
        elif (type(input) is float or type(input) is int) and isinstance(other, Tensor):
            a = input
            b = array = other._data
        else:
            return general(input, other)
        if (
            not is_host(array) or (array.dtype is not _F32 and array.dtype is not _F64)
            or _profiling.recorder is not None  # the profiler times each op in Function.apply
        ):
            return general(input, other)
        try:
            out = (large if array.size >= SPLIT_MIN_ELEMENTS else ufunc)(a, b)
        except Exception:  # the general path checks the operands and raises its own error
            out = None
        if out is None:
            return general(input, other)
        if not _state.enabled:
            return _result(out)
        tensor_a = a is not input  # the operand is a Tensor (a number is its own value)
        tensor_b = b is not other
        # A stale view takes its base's new history before its grad_fn is read (as in Function.apply).
        if tensor_a and input._base is not None:
            check_view_is_current(input, function.op_name)
        if tensor_b and other._base is not None:
            check_view_is_current(other, function.op_name)
        node_a = node_b = None
        if tensor_a:
            node_a = input._grad_fn
            if node_a is None:
                node_a = _leaf_edge(input)
        if tensor_b:
            node_b = other._grad_fn
            if node_b is None:
                node_b = _leaf_edge(other)
        result = _result(out)
        if node_a is not None or node_b is not None:
            _record(
                function, result, [node_a, node_b],
                [a.shape if tensor_a else None, b.shape if tensor_b else None],
                # Two tensors over one array (x.mul_(x) multiplies an alias of x by x) are saved as
                # the first, as _bind_saved maps arrays to inputs: the in-place update snapshots it.
                (node_a is not None, node_b is not None), (input, input if a is b else other),
            )
        return result

    return _in_place_of(public, general)


def unary(function: type[Function], compute: Callable[[Any], Any], general: Callable[..., Tensor],
          contiguous_only: bool = False) -> Callable[..., Tensor]:
    """`general(input, *args, **options)` with the eager fast path in front (module docstring);
    `compute` takes the array (a C-contiguous one only, with `contiguous_only`). A call with more
    arguments (relu's inplace) goes to `general`. A ufunc `compute` is asked for its threaded form
    from SPLIT_MIN_ELEMENTS elements, as in `binary`."""
    large = threaded_ufunc(function.rule, compute) if isinstance(compute, np.ufunc) else compute

    def public(input: Any, *args: Any, **options: Any) -> Tensor:
        # A transform or a compile trace sees each op through Function.apply: straight to general.
        if args or options or anywhere.levels or not isinstance(input, Tensor):
            return general(input, *args, **options)
        a = input._data
        if (
            not is_host(a) or (a.dtype is not _F32 and a.dtype is not _F64)
            or (contiguous_only and not a.flags.c_contiguous)
            or _profiling.recorder is not None  # the profiler times each op in Function.apply
        ):
            return general(input)
        if not _state.enabled:
            return _result((large if a.size >= SPLIT_MIN_ELEMENTS else compute)(a))
        if input._base is not None:
            check_view_is_current(input, function.op_name)
        node = input._grad_fn
        if node is None:
            node = _leaf_edge(input)
        result = _result((large if a.size >= SPLIT_MIN_ELEMENTS else compute)(a))
        if node is not None:
            _record(function, result, [node], [a.shape], (True,), (input,))
        return result

    return _in_place_of(public, general)
